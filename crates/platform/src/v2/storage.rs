//! Template, network volume and registry credential calls.

use reqwest::Method;

use super::types::{
    CreateNetworkVolume, CreateRegistry, CreateTemplate, NetworkVolume, Registry, Template,
    UpdateNetworkVolume, UpdateTemplate,
};
use super::{Result, V2, check_id};
use crate::operation::Operation;
use crate::transport::PathApi;

impl V2 {
    /// `GET /v2/templates`: the account's own templates.
    pub async fn list_templates(&self) -> Result<Vec<Template>> {
        self.list_templates_as(std::convert::identity).await
    }

    /// [`Self::list_templates`], each converted by `convert` as it is read.
    pub(crate) async fn list_templates_as<U: Send + 'static>(
        &self,
        convert: fn(Template) -> U,
    ) -> Result<Vec<U>> {
        let op = (Operation::V2ListTemplates, "templates");
        self.list(op, &["templates"], &[], convert).await
    }

    /// `GET /v2/templates/{id}`: an own or a public template.
    pub async fn get_template(&self, id: &str) -> Result<Template> {
        let op = Operation::V2GetTemplate;
        check_id(op, "id", id)?;
        self.get(op, &["templates", id], &[]).await
    }

    /// `POST /v2/templates`. Never repeated after a 5xx or a timeout.
    pub async fn create_template(&self, input: &CreateTemplate) -> Result<Template> {
        self.send_body(
            Operation::V2CreateTemplate,
            Method::POST,
            &["templates"],
            input,
        )
        .await
    }

    /// `PATCH /v2/templates/{id}`.
    pub async fn update_template(&self, id: &str, input: &UpdateTemplate) -> Result<Template> {
        let op = Operation::V2UpdateTemplate;
        check_id(op, "id", id)?;
        self.send_body(op, Method::PATCH, &["templates", id], input)
            .await
    }

    /// `DELETE /v2/templates/{id}`; refused (400) while a pod or endpoint uses it.
    pub async fn delete_template(&self, id: &str) -> Result<()> {
        let op = Operation::V2DeleteTemplate;
        check_id(op, "id", id)?;
        self.delete(op, &["templates", id]).await
    }

    /// `GET /v2/network-volumes`.
    pub async fn list_network_volumes(&self) -> Result<Vec<NetworkVolume>> {
        self.list_network_volumes_as(std::convert::identity).await
    }

    /// [`Self::list_network_volumes`], each converted by `convert` as it is read.
    pub(crate) async fn list_network_volumes_as<U: Send + 'static>(
        &self,
        convert: fn(NetworkVolume) -> U,
    ) -> Result<Vec<U>> {
        let op = (Operation::V2ListNetworkVolumes, "networkVolumes");
        self.list(op, &["network-volumes"], &[], convert).await
    }

    /// `GET /v2/network-volumes/{id}`.
    pub async fn get_network_volume(&self, id: &str) -> Result<NetworkVolume> {
        let op = Operation::V2GetNetworkVolume;
        check_id(op, "id", id)?;
        self.get(op, &["network-volumes", id], &[]).await
    }

    /// `POST /v2/network-volumes`. Never repeated after a 5xx or a timeout.
    pub async fn create_network_volume(
        &self,
        input: &CreateNetworkVolume,
    ) -> Result<NetworkVolume> {
        self.send_body(
            Operation::V2CreateNetworkVolume,
            Method::POST,
            &["network-volumes"],
            input,
        )
        .await
    }

    /// `PATCH /v2/network-volumes/{id}`; the size may only grow.
    pub async fn update_network_volume(
        &self,
        id: &str,
        input: &UpdateNetworkVolume,
    ) -> Result<NetworkVolume> {
        let op = Operation::V2UpdateNetworkVolume;
        check_id(op, "id", id)?;
        self.send_body(op, Method::PATCH, &["network-volumes", id], input)
            .await
    }

    /// `DELETE /v2/network-volumes/{id}`.
    pub async fn delete_network_volume(&self, id: &str) -> Result<()> {
        let op = Operation::V2DeleteNetworkVolume;
        check_id(op, "id", id)?;
        self.delete(op, &["network-volumes", id]).await
    }

    /// `GET /v2/registries`.
    pub async fn list_registries(&self) -> Result<Vec<Registry>> {
        self.list_registries_as(std::convert::identity).await
    }

    /// [`Self::list_registries`], each converted by `convert` as it is read.
    pub(crate) async fn list_registries_as<U: Send + 'static>(
        &self,
        convert: fn(Registry) -> U,
    ) -> Result<Vec<U>> {
        let op = (Operation::V2ListRegistries, "registries");
        self.list(op, &["registries"], &[], convert).await
    }

    /// `GET /v2/registries/{id}`.
    pub async fn get_registry(&self, id: &str) -> Result<Registry> {
        let op = Operation::V2GetRegistry;
        check_id(op, "id", id)?;
        self.get(op, &["registries", id], &[]).await
    }

    /// `POST /v2/registries`. Never repeated after a 5xx or a timeout. The credentials are
    /// sent once and never answered back.
    pub async fn create_registry(&self, input: &CreateRegistry) -> Result<Registry> {
        self.send_body(
            Operation::V2CreateRegistry,
            Method::POST,
            &["registries"],
            input,
        )
        .await
    }

    /// `DELETE /v2/registries/{id}`; refused (400) while a pod pulls with it.
    pub async fn delete_registry(&self, id: &str) -> Result<()> {
        let op = Operation::V2DeleteRegistry;
        check_id(op, "id", id)?;
        self.delete(op, &["registries", id]).await
    }
}
