//! A local emulator of the platform's four API surfaces: the job API, the REST management
//! API, registry delegation and GraphQL, with fault injection and a fast clock.
//!
//! Start it in-process with [`start`] (port 0 is fine) or as `gpucloud-operator emulator`.
//! The routes and the admin surface are described in the crate's `README.md`.

pub mod admin;
pub mod auth;
pub mod clock;
pub mod collection;
pub mod error;
pub mod faults;
pub mod fixtures;
pub mod graphql;
mod graphql_fast;
mod graphql_my_pods;
mod graphql_pod;
pub mod ids;
pub mod jobs;
pub mod model;
pub mod pods;
pub mod quota;
pub mod ratelimit;
pub mod record_map;
pub mod registry;
pub mod rest;
pub mod rest_registries;
pub mod start_failure;
pub mod state;
pub mod usage;
pub mod v2;
pub mod validate;
pub mod workers;
pub mod world;

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};

pub use admin::AdminClient;
pub use auth::ApiKey;
pub use fixtures::Fixtures;
pub use start_failure::StartFailure;

use error::ApiError;
use model::{EndpointRecord, NetworkVolume, RegistryAuth, Template};
use state::{App, Emulator};

/// How the emulator behaves.
#[derive(Debug, Clone)]
pub struct EmulatorConfig {
    pub api_keys: Vec<ApiKey>,
    /// The emulator's clock runs this many times faster than real time.
    pub time_scale: f64,
    /// Catalog and initial state; the built-in fixtures when `None`.
    pub fixtures: Option<Fixtures>,
    /// The dynamic rate-limit rule's requests_per_worker.
    pub requests_per_worker: u32,
    /// Lets non-loopback callers use `/_emulator/` with `x-emulator-admin-token`.
    pub admin_token: Option<String>,
    /// Emulated milliseconds a pod takes to boot (its `runtime` is null until then).
    pub pod_boot_ms: u64,
    /// Registry delegation calls allowed per key per minute.
    pub registry_requests_per_minute: u32,
    /// Keys that are valid but have no access to registry delegations (403).
    pub registry_forbidden_keys: Vec<String>,
    /// REST v2 requests allowed per key and route group in each window.
    pub v2_quota: v2::limits::Quota,
}

impl Default for EmulatorConfig {
    fn default() -> Self {
        Self {
            api_keys: vec![ApiKey {
                key: "test-key".into(),
                read_only: false,
            }],
            time_scale: 1.0,
            fixtures: None,
            requests_per_worker: 10,
            admin_token: None,
            pod_boot_ms: 5_000,
            registry_requests_per_minute: 60,
            registry_forbidden_keys: Vec::new(),
            v2_quota: v2::limits::Quota::default(),
        }
    }
}

/// A started emulator. Dropping it without [`RunningEmulator::shutdown`] leaves the server
/// running until the runtime stops.
pub struct RunningEmulator {
    addr: SocketAddr,
    /// `http`, or `https` when started on a TLS listener.
    scheme: &'static str,
    app: App,
    shutdown: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<()>,
    sweeper: tokio::task::JoinHandle<()>,
}

impl RunningEmulator {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn base_url(&self) -> String {
        format!("{}://{}", self.scheme, self.addr)
    }

    pub fn rest_url(&self) -> String {
        format!("{}/v1", self.base_url())
    }

    pub fn graphql_url(&self) -> String {
        format!("{}/graphql", self.base_url())
    }

    /// Job API base: `{serverless_url}/{endpoint_id}/run`, ...
    pub fn serverless_url(&self) -> String {
        format!("{}/v2", self.base_url())
    }

    /// Registry base: the listing is `{registry_url}/v2/registries/delegations`.
    pub fn registry_url(&self) -> String {
        self.base_url()
    }

    pub fn admin(&self) -> AdminClient {
        AdminClient::new(self.base_url(), self.app.config.admin_token.clone())
    }

    /// Every call received from now on, with the real instant it arrived.
    pub fn subscribe_calls(&self) -> tokio::sync::broadcast::Receiver<faults::CallSeen> {
        self.app.faults.subscribe()
    }

    /// The emulator's clock (emulated milliseconds since start).
    pub fn now_ms(&self) -> u64 {
        self.app.clock.now()
    }

    /// The emulator's clock itself, for an in-process operator to run on (see
    /// `gpucloud_engine::clock`).
    pub fn clock(&self) -> clock::Clock {
        self.app.clock.clone()
    }

    pub async fn shutdown(self) {
        let _ = self.shutdown.send(());
        self.sweeper.abort();
        for rt in self.app.runtimes.read().values() {
            rt.close();
        }
        let _ = self.server.await;
    }
}

/// Starts the emulator on `listen` (port 0 picks a free port), in plain HTTP.
pub async fn start(config: EmulatorConfig, listen: SocketAddr) -> std::io::Result<RunningEmulator> {
    let listener = tokio::net::TcpListener::bind(listen).await?;
    start_on(config, listener, "http").await
}

/// Starts the emulator on a listener of the caller's (a TLS one, for `https`): `scheme` is
/// the one its URLs name.
pub async fn start_on<L>(
    config: EmulatorConfig,
    listener: L,
    scheme: &'static str,
) -> std::io::Result<RunningEmulator>
where
    L: axum::serve::Listener<Addr = SocketAddr>,
{
    use axum::serve::ListenerExt as _;
    let app = Emulator::new(config).map_err(std::io::Error::other)?;
    let addr = listener.local_addr()?;
    // Tapped (doing nothing) because axum hands a caller's address to the handlers of any
    // tapped listener, but untapped only to a plain TCP one: the admin routes need it.
    let listener = listener.tap_io(|_| {});
    let router = router(app.clone());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        let serve = axum::serve(
            listener,
            router.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .with_graceful_shutdown(async {
            let _ = rx.await;
        });
        if let Err(err) = serve.await {
            tracing::error!(%err, "emulator server stopped");
        }
    });
    let sweeper_app = app.clone();
    let sweeper = tokio::spawn(async move {
        // Expired jobs are also dropped lazily on every read; this keeps memory bounded.
        let mut tick = tokio::time::interval(Duration::from_millis(200));
        loop {
            tick.tick().await;
            sweeper_app.sweep();
        }
    });
    tracing::info!(%addr, "emulator listening");
    Ok(RunningEmulator {
        addr,
        scheme,
        app,
        shutdown: tx,
        server,
        sweeper,
    })
}

/// Every route of every surface.
pub fn router(app: App) -> Router {
    use jobs::routes as j;
    let api = Router::new()
        // REST management API.
        .route(
            "/v1/endpoints",
            get(rest::list::<EndpointRecord>).post(rest::create_endpoint),
        )
        .route(
            "/v1/endpoints/{id}",
            get(rest::get_one::<EndpointRecord>)
                .patch(rest::update_endpoint)
                .delete(rest::delete_endpoint),
        )
        .route(
            "/v1/networkvolumes",
            get(rest::list::<NetworkVolume>).post(rest::create::<NetworkVolume>),
        )
        .route(
            "/v1/networkvolumes/{id}",
            get(rest::get_one::<NetworkVolume>)
                .patch(rest::update_volume)
                .delete(rest::delete_unused::<NetworkVolume>),
        )
        .route("/v1/networkvolumes/{id}/update", post(rest::update_volume))
        .route(
            "/v1/templates",
            get(rest::list::<Template>).post(rest::create::<Template>),
        )
        .route(
            "/v1/templates/{id}",
            get(rest::get_one::<Template>)
                .patch(rest::update_template)
                .delete(rest::delete_unused::<Template>),
        )
        .route("/v1/templates/{id}/update", post(rest::update_template))
        .route(
            "/v1/containerregistryauth",
            get(rest::list::<RegistryAuth>).post(rest_registries::create),
        )
        .route(
            "/v1/containerregistryauth/{id}",
            get(rest::get_one::<RegistryAuth>).delete(rest::delete_unused::<RegistryAuth>),
        )
        // Registry delegation: a static segment, so it wins over `/v2/{endpoint_id}`.
        .route(
            "/v2/registries/delegations",
            get(registry::list).post(registry::create),
        )
        .route(
            "/v2/registries/delegations/{id}",
            delete(registry::delete).fallback(registry::by_id_other_methods),
        )
        // REST v2: static first segments, so they win over `/v2/{endpoint_id}`.
        .merge(v2::mounted(&app))
        // Job API.
        .route("/v2/{endpoint_id}/run", post(j::run))
        .route("/v2/{endpoint_id}/runsync", post(j::runsync))
        .route("/v2/{endpoint_id}/status/{job_id}", get(j::status))
        .route("/v2/{endpoint_id}/stream/{job_id}", get(j::stream))
        .route("/v2/{endpoint_id}/cancel/{job_id}", post(j::cancel))
        .route("/v2/{endpoint_id}/retry/{job_id}", post(j::retry))
        .route("/v2/{endpoint_id}/purge-queue", post(j::purge_queue))
        .route("/v2/{endpoint_id}/health", get(j::health))
        .route("/v2/{endpoint_id}/requests", get(j::requests))
        .route("/v2/{endpoint_id}/openai/{*path}", post(j::openai))
        // GraphQL.
        .route("/graphql", post(graphql::handler))
        .route_layer(middleware::from_fn_with_state(app.clone(), faults_layer));
    let admin_routes = Router::new()
        .route("/_emulator/state", get(admin::state))
        .route(
            "/_emulator/calls",
            get(admin::calls).delete(admin::clear_calls),
        )
        .route(
            "/_emulator/faults",
            get(admin::list_faults)
                .post(admin::add_fault)
                .delete(admin::clear_faults),
        )
        .route("/_emulator/burst", post(admin::burst))
        .route("/_emulator/stock", post(admin::stock))
        .route("/_emulator/machines", post(admin::machines))
        .route("/_emulator/stock-view", post(admin::stock_view))
        .route("/_emulator/create-500", post(admin::create_500))
        .route("/_emulator/clock", get(admin::clock))
        .route("/_emulator/clock/advance", post(admin::advance))
        .route("/_emulator/gpu-utilisation", post(admin::gpu_utilisation))
        .route("/_emulator/fail-image", post(admin::fail_image))
        .route(
            "/_emulator/fail-registry-login",
            post(admin::fail_registry_login),
        )
        .route("/_emulator/host", post(admin::host))
        .route("/_emulator/price-markup", post(admin::price_markup))
        .route("/_emulator/cpu-stock", post(admin::cpu_stock))
        .route("/_emulator/v2-quota", post(admin::v2_quota))
        .route("/_emulator/reset", post(admin::reset))
        .route_layer(middleware::from_fn_with_state(app.clone(), admin::guard));
    api.merge(admin_routes)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        // Bodies are read whole and checked against the spec's payload limits by the
        // handlers (10 MB /run, 20 MB /runsync), so axum's 2 MB default must not apply.
        .layer(DefaultBodyLimit::max(64 * 1024 * 1024))
        .with_state(app)
}

async fn not_found(State(app): State<App>, req: Request) -> Response {
    if let Some(refused) = v2_without_key(&app, &req) {
        return refused;
    }
    let err = ApiError::not_found(format!(
        "no route for {} {}",
        req.method(),
        req.uri().path()
    ));
    in_surface_shape(req.uri().path(), err)
}

async fn method_not_allowed(State(app): State<App>, req: Request) -> Response {
    if let Some(refused) = v2_without_key(&app, &req) {
        return refused;
    }
    let err = ApiError::new(
        axum::http::StatusCode::METHOD_NOT_ALLOWED,
        format!("{} is not allowed on {}", req.method(), req.uri().path()),
    );
    in_surface_shape(req.uri().path(), err)
}

/// REST v2 requires the key on every request, so even one no route serves is a 401 without
/// it: the 404 or 405 is for a caller the platform would have let in.
fn v2_without_key(app: &App, req: &Request) -> Option<Response> {
    if !v2::is_rest_path(req.uri().path()) {
        return None;
    }
    v2::request::authenticate(app, req.headers())
        .err()
        .map(IntoResponse::into_response)
}

/// REST v2 answers errors as problem+json; the seed surfaces keep their JSON body.
fn in_surface_shape(path: &str, err: ApiError) -> Response {
    if v2::is_rest_path(path) {
        v2::Problem::from(err).into_response()
    } else {
        err.into_response()
    }
}

/// Counts every call by route, applies injected faults, and turns successful creates into
/// 500s when asked to. Logs method, path and status only: never headers or the query string,
/// which may carry the API key.
async fn faults_layer(
    State(app): State<App>,
    matched: Option<MatchedPath>,
    req: Request,
    next: Next,
) -> Response {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let route = format!(
        "{} {}",
        method,
        matched.as_ref().map_or(path.as_str(), |m| m.as_str())
    );
    let action = app.faults.on_call(&route, &path, app.clock.now());
    if action.latency_ms > 0 {
        tokio::time::sleep(Duration::from_millis(action.latency_ms)).await;
    }
    if let Some(err) = action.error {
        tracing::debug!(%method, path, status = err.status.as_u16(), "injected fault");
        return in_surface_shape(&path, err);
    }
    let response = next.run(req).await;
    if response.status().is_success() && method != axum::http::Method::GET {
        app.world.lock().observe_volumes(app.clock.now());
    }
    if action.answer_latency_ms > 0 {
        tokio::time::sleep(Duration::from_millis(action.answer_latency_ms)).await;
    }
    if response.status().is_success() && app.faults.take_create_500(&route, &path) {
        tracing::info!(route, "injected: create succeeded but answering 500");
        return in_surface_shape(&path, ApiError::internal("internal server error"));
    }
    tracing::debug!(%method, path, status = response.status().as_u16(), "served");
    response
}
