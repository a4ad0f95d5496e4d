//! The GraphQL API at `/graphql`: a real async-graphql server whose schema is the committed
//! `schema/platform.graphql` (a test compares the two structurally).
//!
//! Auth: the `api_key` query parameter (as the spec documents) or `Authorization: Bearer`
//! (as the official clients send). 401 for a missing or wrong key, 403 when a read-only key
//! runs a mutation, 400 when the document does not parse or validate. Errors of operations
//! (no stock, unknown pod, ...) come in the `errors` array with HTTP 200.

use std::collections::HashMap;

use async_graphql::parser::types::{
    DocumentOperations, ExecutableDocument, OperationType, Selection, SelectionSet,
};
use async_graphql::{
    ComplexObject, Context, EmptySubscription, Enum, Error, InputObject, Object, Schema,
    SimpleObject,
};
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use parking_lot::MutexGuard;
use serde_json::json;

use super::auth::Caller;
use super::clock::Millis;
use super::graphql_fast::{Plan, PodList, pods_value};
use super::graphql_my_pods::MyPods;
use super::graphql_pod::{Pod, pod_view};
use super::pods::{self, CloudChoice, DeployRequest, TemplateDefaults};
use super::state::App;
use super::v2::listing;

pub type PlatformSchema = Schema<QueryRoot, MutationRoot, EmptySubscription>;

/// Builds the schema (the same one `sdl()` prints for the drift test).
pub fn build_schema() -> PlatformSchema {
    Schema::build(QueryRoot, MutationRoot, EmptySubscription).finish()
}

/// The schema every request runs against: built once per process and holding no state
/// (the world comes with each request), so it lives with the surface, not the world.
pub fn schema() -> &'static PlatformSchema {
    static SCHEMA: std::sync::OnceLock<PlatformSchema> = std::sync::OnceLock::new();
    SCHEMA.get_or_init(build_schema)
}

// ------------------------------------------------------------------ types

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
pub enum CloudTypeEnum {
    All,
    Secure,
    Community,
}

#[derive(InputObject, Debug)]
pub struct EnvironmentVariableInput {
    pub key: String,
    pub value: String,
}

#[derive(InputObject, Debug, Default)]
pub struct PodFindAndDeployOnDemandInput {
    pub cloud_type: Option<CloudTypeEnum>,
    pub gpu_count: Option<i32>,
    pub volume_in_gb: Option<i32>,
    pub container_disk_in_gb: Option<i32>,
    pub min_vcpu_count: Option<i32>,
    pub min_memory_in_gb: Option<i32>,
    pub gpu_type_id: Option<String>,
    pub name: Option<String>,
    pub image_name: Option<String>,
    pub docker_args: Option<String>,
    pub ports: Option<String>,
    pub volume_mount_path: Option<String>,
    pub env: Option<Vec<EnvironmentVariableInput>>,
    pub allowed_cuda_versions: Option<Vec<String>>,
    pub data_center_id: Option<String>,
    pub country_code: Option<String>,
    pub network_volume_id: Option<String>,
    pub template_id: Option<String>,
    pub support_public_ip: Option<bool>,
    pub start_ssh: Option<bool>,
    pub min_download: Option<i32>,
    pub min_upload: Option<i32>,
}

#[derive(InputObject, Debug)]
pub struct PodResumeInput {
    pub pod_id: String,
    pub gpu_count: Option<i32>,
    pub allowed_cuda_versions: Option<Vec<String>>,
}

#[derive(InputObject, Debug)]
pub struct PodStopInput {
    pub pod_id: String,
}

#[derive(InputObject, Debug)]
pub struct PodTerminateInput {
    pub pod_id: String,
}

#[derive(InputObject, Debug)]
pub struct PodFilter {
    pub pod_id: String,
}

#[derive(InputObject, Debug)]
pub struct GpuTypeFilter {
    pub id: Option<String>,
}

#[derive(InputObject, Debug, Default)]
pub struct GpuLowestPriceInput {
    pub gpu_count: Option<i32>,
    pub secure_cloud: Option<bool>,
    pub data_center_id: Option<String>,
    pub min_memory_in_gb: Option<i32>,
    pub min_vcpu_count: Option<i32>,
}

#[derive(SimpleObject, Debug, Clone)]
#[graphql(complex)]
pub struct GpuType {
    pub id: String,
    pub display_name: String,
    pub manufacturer: String,
    pub memory_in_gb: i32,
    pub cuda_cores: i32,
    pub max_gpu_count: i32,
    pub secure_cloud: bool,
    pub community_cloud: bool,
    pub secure_price: Option<f64>,
    pub community_price: Option<f64>,
    pub secure_spot_price: Option<f64>,
    pub community_spot_price: Option<f64>,
    pub one_week_price: Option<f64>,
    pub one_month_price: Option<f64>,
    pub three_month_price: Option<f64>,
}

#[derive(SimpleObject, Debug, Clone)]
pub struct LowestPrice {
    /// Hourly price of one GPU on demand; null when the type is not offered in that cloud.
    pub uninterruptable_price: Option<f64>,
    pub minimum_bid_price: Option<f64>,
    /// High, Medium, Low or None.
    pub stock_status: String,
    /// GPU counts that can be deployed right now on one machine.
    pub available_gpu_counts: Vec<i32>,
}

#[derive(SimpleObject, Debug, Clone)]
pub struct NetworkVolume {
    pub id: String,
    pub name: String,
    pub size: i32,
    pub data_center_id: String,
}

/// The account behind the API key.
pub struct User;

#[Object]
impl User {
    async fn id(&self, ctx: &Context<'_>) -> String {
        app(ctx).world.lock().user_id.clone()
    }

    /// Public SSH key of the account (as the official SDK asks for it).
    async fn pub_key(&self) -> Option<String> {
        None
    }

    /// Built straight from the selection set (see `graphql_fast`) for the documents the
    /// handler does not answer itself (`graphql_my_pods`). The world's lock is held only to
    /// copy pointers to the pods and their hosts' facts; the answer is built after it.
    async fn pods(&self, ctx: &Context<'_>) -> PodList {
        PodList::new(pods_value(app(ctx), &Plan::of(&ctx.field())))
    }

    /// Network volumes of the account (as the official SDK asks for them). Only pointers
    /// are copied under the world's lock.
    async fn network_volumes(&self, ctx: &Context<'_>) -> Vec<NetworkVolume> {
        let volumes = app(ctx).world.lock().volumes.shared();
        volumes
            .iter()
            .map(|v| NetworkVolume {
                id: v.id.clone(),
                name: v.name.clone(),
                size: v.size as i32,
                data_center_id: v.data_center_id.clone(),
            })
            .collect()
    }
}

#[ComplexObject]
impl GpuType {
    async fn lowest_price(
        &self,
        ctx: &Context<'_>,
        input: Option<GpuLowestPriceInput>,
    ) -> LowestPrice {
        let input = input.unwrap_or_default();
        let world = app(ctx).world.lock();
        let Some(gpu) = world.cloud.gpu_type(&self.id) else {
            return LowestPrice {
                uninterruptable_price: None,
                minimum_bid_price: None,
                stock_status: "None".into(),
                available_gpu_counts: Vec::new(),
            };
        };
        let info = world.cloud.lowest_price(
            gpu,
            input.gpu_count.unwrap_or(1),
            input.secure_cloud,
            input.data_center_id.as_deref(),
        );
        LowestPrice {
            uninterruptable_price: info.uninterruptable_price,
            minimum_bid_price: info.minimum_bid_price,
            stock_status: info.stock_status.to_string(),
            available_gpu_counts: info.available_gpu_counts,
        }
    }
}

fn app<'a>(ctx: &Context<'a>) -> &'a App {
    ctx.data_unchecked::<App>()
}

fn gpu_view(g: &super::model::GpuTypeFixture) -> GpuType {
    GpuType {
        id: g.id.clone(),
        display_name: g.display_name.clone(),
        manufacturer: g.manufacturer.clone(),
        memory_in_gb: g.memory_in_gb as i32,
        cuda_cores: g.cuda_cores as i32,
        max_gpu_count: g.max_gpu_count as i32,
        secure_cloud: g.secure_price.is_some(),
        community_cloud: g.community_price.is_some(),
        secure_price: g.secure_price,
        community_price: g.community_price,
        secure_spot_price: g.secure_spot_price,
        community_spot_price: g.community_spot_price,
        one_week_price: g.one_week_price,
        one_month_price: g.one_month_price,
        three_month_price: g.three_month_price,
    }
}

// ------------------------------------------------------------------ roots

pub struct QueryRoot;

#[Object(name = "Query")]
impl QueryRoot {
    /// The account behind the API key.
    async fn myself(&self) -> User {
        User
    }

    /// One pod by id. An unknown id is an error saying the pod was not found (the
    /// platform's answer), with `pod` null.
    async fn pod(&self, ctx: &Context<'_>, input: PodFilter) -> Result<Option<Pod>, Error> {
        let app = app(ctx);
        let now = app.clock.now();
        let world = app.world.lock();
        let pod = world
            .cloud
            .standalone_pod(&input.pod_id)
            .ok_or_else(|| seed_not_found(&input.pod_id))?;
        Ok(Some(pod_view(pod, &world.cloud, now, app)))
    }

    /// The GPU catalog, optionally narrowed to one type.
    async fn gpu_types(&self, ctx: &Context<'_>, input: Option<GpuTypeFilter>) -> Vec<GpuType> {
        let world = app(ctx).world.lock();
        let wanted = input.and_then(|i| i.id);
        world
            .cloud
            .gpu_types
            .iter()
            .filter(|g| wanted.as_ref().is_none_or(|id| &g.id == id))
            .map(gpu_view)
            .collect()
    }
}

pub struct MutationRoot;

#[Object(name = "Mutation")]
impl MutationRoot {
    /// Finds a machine with free GPUs of the requested type and deploys a pod on it.
    async fn pod_find_and_deploy_on_demand(
        &self,
        ctx: &Context<'_>,
        input: PodFindAndDeployOnDemandInput,
    ) -> Result<Option<Pod>, Error> {
        let app = app(ctx);
        let now = app.clock.now();
        let mut world = app.world.lock();
        let template = match &input.template_id {
            None => None,
            Some(id) => {
                let t = world
                    .templates
                    .get(id)
                    .ok_or_else(|| Error::new(format!("templateId: unknown template {id:?}")))?;
                Some(TemplateDefaults {
                    id: t.id.clone(),
                    image_name: t.image_name.clone(),
                    container_disk_in_gb: t.container_disk_in_gb,
                    volume_in_gb: t.volume_in_gb,
                    volume_mount_path: t.volume_mount_path.clone(),
                    ports: t.ports.clone(),
                    env: t.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                })
            }
        };
        let network_volume_dc = match &input.network_volume_id {
            None => None,
            Some(id) => Some(
                world
                    .volumes
                    .get(id)
                    .ok_or_else(|| {
                        Error::new(format!("networkVolumeId: unknown network volume {id:?}"))
                    })?
                    .data_center_id
                    .clone(),
            ),
        };
        let req = DeployRequest {
            name: input.name,
            image_name: input.image_name,
            gpu_type_id: input.gpu_type_id,
            gpu_count: input.gpu_count,
            cloud: match input.cloud_type.unwrap_or(CloudTypeEnum::All) {
                CloudTypeEnum::All => CloudChoice::All,
                CloudTypeEnum::Secure => CloudChoice::Secure,
                CloudTypeEnum::Community => CloudChoice::Community,
            },
            data_center_id: input.data_center_id,
            volume_in_gb: input.volume_in_gb.map(i64::from),
            container_disk_in_gb: input.container_disk_in_gb.map(i64::from),
            min_vcpu_count: input.min_vcpu_count,
            min_memory_in_gb: input.min_memory_in_gb,
            docker_args: input.docker_args,
            ports: input.ports,
            volume_mount_path: input.volume_mount_path,
            env: input
                .env
                .unwrap_or_default()
                .into_iter()
                .map(|e| (e.key, e.value))
                .collect(),
            allowed_cuda_versions: input.allowed_cuda_versions,
            min_cuda_version: None,
            data_center_ids: Vec::new(),
            cpu: None,
            network_volume_id: input.network_volume_id,
            network_volume_dc,
            template,
            support_public_ip: input.support_public_ip,
        };
        let id = world
            .cloud
            .deploy(req, now)
            .map_err(|e| Error::new(e.to_string()))?
            .id
            .clone();
        tracing::info!(pod = %id, "pod deployed");
        let pod = world.cloud.pod(&id).expect("just deployed");
        Ok(Some(pod_view(pod, &world.cloud, now, app)))
    }

    /// Starts a stopped pod again on its host machine.
    async fn pod_resume(
        &self,
        ctx: &Context<'_>,
        input: PodResumeInput,
    ) -> Result<Option<Pod>, Error> {
        let app = app(ctx);
        let (world, now) = change_seed_pod(app, &input.pod_id, |cloud, now| {
            cloud.resume(&input.pod_id, input.gpu_count, now).map(drop)
        })?;
        let pod = world.cloud.pod(&input.pod_id).expect("resumed");
        Ok(Some(pod_view(pod, &world.cloud, now, app)))
    }

    /// Stops a running pod; its GPUs go back to stock and its volume data is kept.
    async fn pod_stop(&self, ctx: &Context<'_>, input: PodStopInput) -> Result<Option<Pod>, Error> {
        let app = app(ctx);
        let (world, now) = change_seed_pod(app, &input.pod_id, |cloud, now| {
            cloud.stop(&input.pod_id, now).map(drop)
        })?;
        let pod = world.cloud.pod(&input.pod_id).expect("stopped");
        Ok(Some(pod_view(pod, &world.cloud, now, app)))
    }

    /// Removes a pod for good.
    async fn pod_terminate(
        &self,
        ctx: &Context<'_>,
        input: PodTerminateInput,
    ) -> Result<Option<bool>, Error> {
        let (_world, _) = change_seed_pod(app(ctx), &input.pod_id, |cloud, now| {
            cloud.terminate(&input.pod_id, now)
        })?;
        Ok(Some(true))
    }
}

/// The platform's answer to a pod id it does not know.
fn seed_not_found(id: &str) -> Error {
    Error::new(pods::PodError::NotFound(id.to_string()).to_string())
}

/// The seed surface has no clusters: a cluster member is a pod it does not know, so it can
/// neither show nor change one (only `/v2/clusters` may).
/// Applies `change` to the seed's pod `id` at the emulator's time, under the world's lock
/// (a pod of a cluster is unknown to the seed); the world, still locked, and the time, for
/// the answer.
fn change_seed_pod<'a>(
    app: &'a App,
    id: &str,
    change: impl FnOnce(&mut pods::Cloud, Millis) -> Result<(), pods::PodError>,
) -> Result<(MutexGuard<'a, crate::state::World>, Millis), Error> {
    let now = app.clock.now();
    let mut world = app.world.lock();
    known_to_seed(&world, id)?;
    change(&mut world.cloud, now).map_err(|e| Error::new(e.to_string()))?;
    Ok((world, now))
}

fn known_to_seed(world: &crate::state::World, id: &str) -> Result<(), Error> {
    match world.cloud.pod(id) {
        Some(p) if p.cluster.is_some() => Err(seed_not_found(id)),
        _ => Ok(()),
    }
}

// ------------------------------------------------------------------ HTTP

fn gql_error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({"errors": [{"message": message}]}))).into_response()
}

/// What the handler needs to know about the operation before running it.
struct OperationInfo {
    is_mutation: bool,
    /// Top-level field names (not aliases).
    fields: Vec<String>,
    /// Variables declared non-null without a default.
    required_variables: Vec<String>,
}

fn operation_info(doc: &ExecutableDocument, name: Option<&str>) -> OperationInfo {
    let op = match (&doc.operations, name) {
        (DocumentOperations::Single(op), _) => Some(op),
        (DocumentOperations::Multiple(ops), Some(n)) => ops.get(n),
        (DocumentOperations::Multiple(ops), None) if ops.len() == 1 => ops.values().next(),
        _ => None,
    };
    let Some(op) = op else {
        return OperationInfo {
            is_mutation: false,
            fields: Vec::new(),
            required_variables: Vec::new(),
        };
    };
    let mut fields = Vec::new();
    collect_fields(doc, &op.node.selection_set.node, &mut fields, 0);
    OperationInfo {
        is_mutation: op.node.ty == OperationType::Mutation,
        fields,
        required_variables: op
            .node
            .variable_definitions
            .iter()
            .filter(|v| !v.node.var_type.node.nullable && v.node.default_value.is_none())
            .map(|v| v.node.name.node.to_string())
            .collect(),
    }
}

fn collect_fields(doc: &ExecutableDocument, set: &SelectionSet, out: &mut Vec<String>, depth: u32) {
    if depth > 8 {
        return;
    }
    for item in &set.items {
        match &item.node {
            Selection::Field(f) => out.push(f.node.name.node.to_string()),
            Selection::InlineFragment(f) => {
                collect_fields(doc, &f.node.selection_set.node, out, depth + 1)
            }
            Selection::FragmentSpread(s) => {
                if let Some(frag) = doc.fragments.get(&s.node.fragment_name.node) {
                    collect_fields(doc, &frag.node.selection_set.node, out, depth + 1);
                }
            }
        }
    }
}

/// What answers a document: async-graphql's response, or the bytes the handler wrote.
enum Answer {
    Executed(async_graphql::Response),
    Written(Vec<u8>),
}

/// `POST /graphql`.
pub async fn handler(
    State(app): State<App>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    // Auth: ?api_key= or Authorization: Bearer.
    let caller: Option<Caller> = match query.get("api_key") {
        Some(key) => app.keys.identify(key),
        None => app.keys.bearer(&headers).ok(),
    };
    let Some(caller) = caller else {
        return gql_error(
            StatusCode::UNAUTHORIZED,
            "Unauthorized: missing or incorrect API key (send ?api_key= or Authorization: Bearer)",
        );
    };
    let mut request: async_graphql::Request = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return gql_error(
                StatusCode::BAD_REQUEST,
                &format!("body must be JSON {{\"query\": ...}}: {e}"),
            );
        }
    };
    let operation_name = request.operation_name.clone();
    let no_variables = request.variables.is_empty();
    let (info, my_pods) = match request.parsed_query() {
        Ok(doc) => (
            operation_info(doc, operation_name.as_deref()),
            MyPods::recognise(doc, operation_name.as_deref(), no_variables),
        ),
        Err(e) => return gql_error(StatusCode::BAD_REQUEST, &e.message),
    };
    // A missing required variable is a validation failure (400), not a field error.
    if let Some(missing) = info.required_variables.iter().find(|v| {
        request
            .variables
            .get(v.as_str())
            .is_none_or(|value| *value == async_graphql::Value::Null)
    }) {
        return gql_error(
            StatusCode::BAD_REQUEST,
            &format!("Variable \"${missing}\" of required type was not provided."),
        );
    }
    let (is_mutation, fields) = (info.is_mutation, info.fields);
    if is_mutation && caller.read_only {
        return gql_error(
            StatusCode::FORBIDDEN,
            "Forbidden: this API key is read-only and may not run mutations",
        );
    }
    let now = app.clock.now();
    let mut latency = 0;
    let mut answer_latency = 0;
    for field in &fields {
        let action = app
            .faults
            .on_call(&format!("graphql:{field}"), "/graphql", now);
        latency += action.latency_ms;
        answer_latency += action.answer_latency_ms;
        if let Some(err) = action.error {
            if latency > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(latency)).await;
            }
            return gql_error(err.status, &err.detail);
        }
    }
    if latency > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(latency)).await;
    }
    // The operator's pod listing is answered here, off the runtime's workers; every other
    // document by async-graphql.
    let answer = match my_pods {
        Some(my_pods) => {
            let app = app.clone();
            Answer::Written(listing::off_the_workers(move || my_pods.answer(&app)).await)
        }
        None => Answer::Executed(
            schema()
                .execute(request.data(app.clone()).data(caller))
                .await,
        ),
    };
    if answer_latency > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(answer_latency)).await;
    }
    let succeeded = match &answer {
        Answer::Executed(response) => {
            if !response.errors.is_empty() && response.errors.iter().all(|e| e.path.is_empty()) {
                // The document did not validate (unknown field, bad variable, ...): errors
                // of resolvers carry the path of their field, validation errors carry none.
                return (StatusCode::BAD_REQUEST, Json(response)).into_response();
            }
            response.errors.is_empty()
        }
        Answer::Written(_) => true,
    };
    if succeeded {
        for field in &fields {
            let route = format!("graphql:{field}");
            if app.faults.take_create_500(&route, "/graphql") {
                tracing::info!(route, "injected: create succeeded but answering 500");
                return gql_error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Something went wrong. Please try again later or contact support.",
                );
            }
        }
    }
    match answer {
        Answer::Executed(response) => Json(response).into_response(),
        Answer::Written(body) => listing::json_response(body),
    }
}
