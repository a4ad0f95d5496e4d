//! The REST management API under `{rest}` (which ends in `/v1`): endpoints, network volumes,
//! templates and container registry credentials. Bearer auth.

use reqwest::Method;
use serde::de::DeserializeOwned;
use url::Url;

use super::error::PlatformError;
use super::operation::Operation;
use super::transport::{Auth, Call, PathApi, Transport};
use super::types::{
    ContainerRegistryAuth, ContainerRegistryAuthCreate, Endpoint, EndpointCreate, EndpointUpdate,
    Listing, NetworkVolume, NetworkVolumeCreate, NetworkVolumeUpdate, Template, TemplateCreate,
    TemplateUpdate,
};
use super::validate;

type Result<T> = std::result::Result<T, PlatformError>;

/// REST calls. Cheap to clone; obtained from [`super::PlatformClient::rest`].
#[derive(Clone, Debug)]
pub struct Rest {
    t: Transport,
}

impl PathApi for Rest {
    fn transport(&self) -> &Transport {
        &self.t
    }

    fn call(&self, op: Operation, method: Method, segments: &[&str]) -> Call {
        Call::new(op, method, self.url(segments), Auth::Bearer)
    }
}

impl Rest {
    pub(crate) fn new(t: Transport) -> Self {
        Self { t }
    }

    fn url(&self, segments: &[&str]) -> Url {
        let mut url = self.t.urls().rest.clone();
        {
            let mut path = url.path_segments_mut().expect("http(s) base URL");
            path.pop_if_empty();
            for s in segments {
                path.push(s);
            }
        }
        url
    }

    async fn list<T: DeserializeOwned>(&self, op: Operation, collection: &str) -> Result<Vec<T>> {
        let Listing(items) = self
            .t
            .send_json(&self.call(op, Method::GET, &[collection]))
            .await?;
        Ok(items)
    }

    async fn get<T: DeserializeOwned>(
        &self,
        op: Operation,
        collection: &str,
        id: &str,
        field: &str,
    ) -> Result<T> {
        validate::id(field, id).map_err(|e| e.in_operation(op.name()))?;
        self.t
            .send_json(&self.call(op, Method::GET, &[collection, id]))
            .await
    }

    async fn delete(&self, op: Operation, collection: &str, id: &str, field: &str) -> Result<()> {
        validate::id(field, id).map_err(|e| e.in_operation(op.name()))?;
        // The answer's body (if any) says nothing the caller needs.
        self.t
            .send(&self.call(op, Method::DELETE, &[collection, id]))
            .await
            .map(|_| ())
    }

    // --- endpoints -------------------------------------------------------------------

    /// `GET /endpoints`.
    pub async fn list_endpoints(&self) -> Result<Vec<Endpoint>> {
        self.list(Operation::RestListEndpoints, "endpoints").await
    }

    /// `GET /endpoints/{id}`.
    pub async fn get_endpoint(&self, endpoint_id: &str) -> Result<Endpoint> {
        self.get(
            Operation::RestGetEndpoint,
            "endpoints",
            endpoint_id,
            "endpointId",
        )
        .await
    }

    /// `POST /endpoints`. Never retried after a 5xx or timeout: on
    /// [`PlatformError::may_have_been_applied`], list the endpoints and look for the name.
    pub async fn create_endpoint(&self, input: &EndpointCreate) -> Result<Endpoint> {
        let op = Operation::RestCreateEndpoint;
        validate::endpoint_create(input).map_err(|e| e.in_operation(op.name()))?;
        self.send_body(op, Method::POST, &["endpoints"], input)
            .await
    }

    /// `PATCH /endpoints/{id}`.
    pub async fn update_endpoint(
        &self,
        endpoint_id: &str,
        input: &EndpointUpdate,
    ) -> Result<Endpoint> {
        let op = Operation::RestUpdateEndpoint;
        validate::id("endpointId", endpoint_id).map_err(|e| e.in_operation(op.name()))?;
        validate::endpoint_update(input).map_err(|e| e.in_operation(op.name()))?;
        self.send_body(op, Method::PATCH, &["endpoints", endpoint_id], input)
            .await
    }

    /// `DELETE /endpoints/{id}`.
    pub async fn delete_endpoint(&self, endpoint_id: &str) -> Result<()> {
        self.delete(
            Operation::RestDeleteEndpoint,
            "endpoints",
            endpoint_id,
            "endpointId",
        )
        .await
    }

    // --- network volumes -------------------------------------------------------------

    /// `GET /networkvolumes`.
    pub async fn list_network_volumes(&self) -> Result<Vec<NetworkVolume>> {
        self.list(Operation::RestListNetworkVolumes, "networkvolumes")
            .await
    }

    /// `GET /networkvolumes/{id}`.
    pub async fn get_network_volume(&self, volume_id: &str) -> Result<NetworkVolume> {
        self.get(
            Operation::RestGetNetworkVolume,
            "networkvolumes",
            volume_id,
            "networkVolumeId",
        )
        .await
    }

    /// `POST /networkvolumes`. Not retried after a 5xx or timeout (see
    /// [`Rest::create_endpoint`]).
    pub async fn create_network_volume(
        &self,
        input: &NetworkVolumeCreate,
    ) -> Result<NetworkVolume> {
        let op = Operation::RestCreateNetworkVolume;
        validate::volume_create(input).map_err(|e| e.in_operation(op.name()))?;
        self.send_body(op, Method::POST, &["networkvolumes"], input)
            .await
    }

    /// `PATCH /networkvolumes/{id}` (operation UpdateNetworkVolume): rename and/or grow.
    /// The size must exceed the current one; the platform checks that.
    pub async fn update_network_volume(
        &self,
        volume_id: &str,
        input: &NetworkVolumeUpdate,
    ) -> Result<NetworkVolume> {
        self.send_volume_update(Method::PATCH, volume_id, &[], input)
            .await
    }

    /// The same update through its synonym `POST /networkvolumes/{id}/update`, for proxies
    /// that refuse PATCH.
    pub async fn update_network_volume_via_post(
        &self,
        volume_id: &str,
        input: &NetworkVolumeUpdate,
    ) -> Result<NetworkVolume> {
        self.send_volume_update(Method::POST, volume_id, &["update"], input)
            .await
    }

    /// Checks and sends a volume update to `/networkvolumes/{id}` followed by `suffix`: the
    /// two routes of UpdateNetworkVolume take the same body and the same checks.
    async fn send_volume_update(
        &self,
        method: Method,
        volume_id: &str,
        suffix: &[&str],
        input: &NetworkVolumeUpdate,
    ) -> Result<NetworkVolume> {
        let op = Operation::RestUpdateNetworkVolume;
        validate::id("networkVolumeId", volume_id).map_err(|e| e.in_operation(op.name()))?;
        validate::volume_update(input).map_err(|e| e.in_operation(op.name()))?;
        let segments: Vec<&str> = ["networkvolumes", volume_id]
            .into_iter()
            .chain(suffix.iter().copied())
            .collect();
        self.send_body(op, method, &segments, input).await
    }

    /// `DELETE /networkvolumes/{id}`.
    pub async fn delete_network_volume(&self, volume_id: &str) -> Result<()> {
        self.delete(
            Operation::RestDeleteNetworkVolume,
            "networkvolumes",
            volume_id,
            "networkVolumeId",
        )
        .await
    }

    // --- templates -------------------------------------------------------------------

    /// `GET /templates`.
    pub async fn list_templates(&self) -> Result<Vec<Template>> {
        self.list(Operation::RestListTemplates, "templates").await
    }

    /// `GET /templates/{id}`.
    pub async fn get_template(&self, template_id: &str) -> Result<Template> {
        self.get(
            Operation::RestGetTemplate,
            "templates",
            template_id,
            "templateId",
        )
        .await
    }

    /// `POST /templates`. Not retried after a 5xx or timeout.
    pub async fn create_template(&self, input: &TemplateCreate) -> Result<Template> {
        let op = Operation::RestCreateTemplate;
        validate::template_create(input).map_err(|e| e.in_operation(op.name()))?;
        self.send_body(op, Method::POST, &["templates"], input)
            .await
    }

    /// `PATCH /templates/{id}`.
    pub async fn update_template(
        &self,
        template_id: &str,
        input: &TemplateUpdate,
    ) -> Result<Template> {
        let op = Operation::RestUpdateTemplate;
        validate::id("templateId", template_id).map_err(|e| e.in_operation(op.name()))?;
        if let Some(n) = &input.name {
            validate::name("name", n).map_err(|e| e.in_operation(op.name()))?;
        }
        self.send_body(op, Method::PATCH, &["templates", template_id], input)
            .await
    }

    /// `DELETE /templates/{id}`.
    pub async fn delete_template(&self, template_id: &str) -> Result<()> {
        self.delete(
            Operation::RestDeleteTemplate,
            "templates",
            template_id,
            "templateId",
        )
        .await
    }

    // --- container registry credentials ------------------------------------------------

    /// `GET /containerregistryauth`.
    pub async fn list_container_registry_auths(&self) -> Result<Vec<ContainerRegistryAuth>> {
        self.list(
            Operation::RestListContainerRegistryAuths,
            "containerregistryauth",
        )
        .await
    }

    /// `POST /containerregistryauth`. Not retried after a 5xx or timeout. The username and
    /// password are sent once and never answered back.
    pub async fn create_container_registry_auth(
        &self,
        input: &ContainerRegistryAuthCreate,
    ) -> Result<ContainerRegistryAuth> {
        let op = Operation::RestCreateContainerRegistryAuth;
        validate::name("name", &input.name).map_err(|e| e.in_operation(op.name()))?;
        self.send_body(op, Method::POST, &["containerregistryauth"], input)
            .await
    }

    /// `DELETE /containerregistryauth/{id}`; refused (400) while a pod or endpoint pulls
    /// with it.
    pub async fn delete_container_registry_auth(&self, id: &str) -> Result<()> {
        self.delete(
            Operation::RestDeleteContainerRegistryAuth,
            "containerregistryauth",
            id,
            "containerRegistryAuthId",
        )
        .await
    }
}
