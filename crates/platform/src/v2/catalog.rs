//! Catalogue calls.

use super::types::listing;
use super::types::{
    CpuQuery, CpuType, DataCenter, DataCenterQuery, GpuQuery, GpuType, PublicTemplateSource,
    Template,
};
use super::{Result, V2, check_id, query};
use crate::operation::Operation;

impl V2 {
    /// `GET /v2/catalog/gpus` with the filters of `q`.
    pub async fn list_gpu_types(&self, q: &GpuQuery) -> Result<Vec<GpuType>> {
        let list: listing::Gpus = self
            .get(
                Operation::V2ListGpuTypes,
                &["catalog", "gpus"],
                &query::gpus(q),
            )
            .await?;
        Ok(list.gpus)
    }

    /// `GET /v2/catalog/gpus/{id}`. GPU type ids hold spaces (`NVIDIA GeForce RTX 4090`):
    /// they are percent-encoded into the path.
    pub async fn get_gpu_type(&self, id: &str, q: &GpuQuery) -> Result<GpuType> {
        let op = Operation::V2GetGpuType;
        check_catalog_id(op, id)?;
        self.get(op, &["catalog", "gpus", id], &query::gpus(q))
            .await
    }

    /// `GET /v2/catalog/cpus`.
    pub async fn list_cpu_types(&self, q: &CpuQuery) -> Result<Vec<CpuType>> {
        let list: listing::Cpus = self
            .get(
                Operation::V2ListCpuTypes,
                &["catalog", "cpus"],
                &query::cpus(q),
            )
            .await?;
        Ok(list.cpus)
    }

    /// `GET /v2/catalog/cpus/{id}`.
    pub async fn get_cpu_type(&self, id: &str, q: &CpuQuery) -> Result<CpuType> {
        let op = Operation::V2GetCpuType;
        check_id(op, "id", id)?;
        self.get(op, &["catalog", "cpus", id], &query::cpus(q))
            .await
    }

    /// `GET /v2/catalog/datacenters`.
    pub async fn list_data_centers(&self, q: &DataCenterQuery) -> Result<Vec<DataCenter>> {
        let list: listing::DataCenters = self
            .get(
                Operation::V2ListDataCenters,
                &["catalog", "datacenters"],
                &query::data_centers(q),
            )
            .await?;
        Ok(list.data_centers)
    }

    /// `GET /v2/catalog/datacenters/{id}`.
    pub async fn get_data_center(&self, id: &str, q: &DataCenterQuery) -> Result<DataCenter> {
        let op = Operation::V2GetDataCenter;
        check_id(op, "id", id)?;
        self.get(op, &["catalog", "datacenters", id], &query::data_centers(q))
            .await
    }

    /// `GET /v2/catalog/templates`: public templates (at most 100), `official` by default.
    pub async fn list_public_templates(
        &self,
        source: Option<PublicTemplateSource>,
    ) -> Result<Vec<Template>> {
        let q: Vec<(&'static str, String)> = source
            .map(|s| vec![("source", s.as_str().to_owned())])
            .unwrap_or_default();
        let list: listing::Templates = self
            .get(
                Operation::V2ListPublicTemplates,
                &["catalog", "templates"],
                &q,
            )
            .await?;
        Ok(list.templates)
    }
}

/// GPU type ids are display-like (`NVIDIA GeForce RTX 4090`), so the usual id check is too
/// strict; the path encoding keeps any character harmless, but not an empty or dot segment.
fn check_catalog_id(op: Operation, id: &str) -> Result<()> {
    crate::validate::name("id", id).map_err(|e| e.in_operation(op.name()))?;
    if id == "." || id == ".." {
        return Err(crate::PlatformError::invalid_input(
            "id",
            "must not be a relative path segment",
        )
        .in_operation(op.name()));
    }
    Ok(())
}
