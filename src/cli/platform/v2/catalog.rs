//! `platform v2 catalog ...`: GPU and CPU types, data centres and public templates, with
//! the filters the document defines.

use super::args::{CatalogCommand, GpuFilterArgs};
use crate::cli::platform::output::Printer;
use gpucloud_platform::v2::{
    Cloud, Compliance, CpuQuery, DataCenterQuery, DataCenterRegion, GpuQuery, Product,
    PublicTemplateSource, V2, VolumeType,
};

pub(super) async fn run(v2: &V2, out: Printer, command: CatalogCommand) -> anyhow::Result<()> {
    match command {
        CatalogCommand::Gpus(filters) => out.rows(&v2.list_gpu_types(&gpu_query(filters)).await?),
        CatalogCommand::Gpu { id, filters } => {
            out.row(&v2.get_gpu_type(&id, &gpu_query(filters)).await?)
        }
        CatalogCommand::Cpus {
            available,
            products,
            vcpus,
        } => {
            let q = CpuQuery {
                availability: available,
                products: parse_all::<Product>(&products),
                vcpu_count: vcpus,
            };
            out.rows(&v2.list_cpu_types(&q).await?)
        }
        CatalogCommand::Datacenters {
            gpu_availability,
            cpu_availability,
            regions,
            volume_types,
            compliance,
            global_network,
        } => {
            let q = DataCenterQuery {
                gpu_availability,
                cpu_availability,
                regions: parse_all::<DataCenterRegion>(&regions),
                network_volume_types: parse_all::<VolumeType>(&volume_types),
                compliance: parse_all::<Compliance>(&compliance),
                global_network,
            };
            out.rows(&v2.list_data_centers(&q).await?)
        }
        CatalogCommand::Templates { source } => {
            let source = source.map(|s| {
                s.parse::<PublicTemplateSource>()
                    .unwrap_or_else(|e| match e {})
            });
            out.rows(&v2.list_public_templates(source).await?)
        }
    }
}

fn gpu_query(f: GpuFilterArgs) -> GpuQuery {
    GpuQuery {
        availability: f.available,
        products: parse_all(&f.products),
        count: f.count,
        cloud: f
            .cloud
            .map(|c| c.parse::<Cloud>().unwrap_or_else(|e| match e {})),
        country_codes: f.countries.iter().map(|c| c.to_ascii_uppercase()).collect(),
        cuda_versions: f.cuda_versions,
        min_cuda_version: f.min_cuda,
    }
}

/// Repeatable flags that may also hold comma-separated values; unknown values are kept
/// (the enums hold them) for the platform to judge.
fn parse_all<T: std::str::FromStr<Err = std::convert::Infallible>>(raw: &[String]) -> Vec<T> {
    raw.iter()
        .flat_map(|r| r.split(','))
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.parse().unwrap_or_else(|e| match e {}))
        .collect()
}
