//! REST v2 serverless endpoints: `GET,POST /v2/serverless`,
//! `GET,PATCH,DELETE /v2/serverless/{id}`, `GET /v2/serverless/{id}/workers`,
//! `GET /v2/serverless/{id}/releases`, `GET /v2/serverless/{id}/workers/{workerId}/logs`.
//!
//! The record is the one `/v1/endpoints` lists (see [`crate::world::endpoints`] for the
//! field mapping) and its runtime is the job API's: an endpoint created here takes jobs at
//! the `requestUrls` at once. A change of the worker configuration makes a release; the
//! workers on older versions report `isStale` until the rollover replaces them, one per
//! [`ROLLOVER_INTERVAL_MS`](crate::world::endpoints::ROLLOVER_INTERVAL_MS) of emulated
//! time, oldest first.

pub mod body;
pub mod listed;
pub mod logs;
pub mod plan;
pub mod view;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};

use super::event_stream;
use super::problem::{Problem, V2Result};
use super::request::{Caller, V2Query, WriteBody, Writer, parse_body};
use crate::collection::ENDPOINTS;
use crate::state::App;
use crate::world::endpoints;
use body::EndpointBody;
use logs::{LogQuery, WorkerLife};

pub fn routes() -> Router<App> {
    Router::new()
        .route("/v2/serverless", get(list).post(create))
        .route(
            "/v2/serverless/{id}",
            get(get_one).patch(update).delete(delete),
        )
        .route("/v2/serverless/{id}/workers", get(workers))
        .route("/v2/serverless/{id}/releases", get(releases))
        .route(
            "/v2/serverless/{id}/workers/{worker_id}/logs",
            get(worker_logs),
        )
}

fn not_found(id: &str) -> Problem {
    Problem::not_found(format!("endpoint {id} not found"))
}

async fn list(State(app): State<App>, _caller: Caller, headers: HeaderMap) -> Response {
    let origin = view::origin(&headers);
    super::listing::written_off_the_workers(move || endpoints_listing(&app, &origin)).await
}

/// The answer to `GET /v2/serverless`: `{"endpoints": [...]}`. Only pointers to the records
/// are copied under the world's lock; the views are written after it, keys in alphabetical
/// order, as the listing has always answered (see [`listed`]).
pub fn endpoints_listing(app: &App, origin: &str) -> Vec<u8> {
    let records = app.world.lock().endpoints.shared();
    // An endpoint is about 900 bytes of JSON.
    super::listing::list_json(Some("endpoints"), &records, 1024, |e, out| {
        let view = view::endpoint(e, origin, &app.clock);
        serde_json::to_writer(out, &listed::ListedEndpoint::from(view))
    })
}

async fn create(
    State(app): State<App>,
    headers: HeaderMap,
    WriteBody(body): WriteBody,
) -> V2Result<Response> {
    let body: EndpointBody = parse_body(&body)?;
    let now = app.clock.now();
    let record = {
        let mut world = app.world.lock();
        let created = plan::plan_create(body, &world, now)?;
        if let Some(t) = created.bound_template {
            world.templates.insert(t.id.clone(), t);
        }
        let record = created.record;
        world.endpoints.insert(record.id.clone(), record.clone());
        record
    };
    app.add_runtime(&record);
    tracing::info!(endpoint = %record.id, "endpoint created (v2)");
    let origin = view::origin(&headers);
    let answer = view::endpoint(&record, &origin, &app.clock);
    Ok((StatusCode::CREATED, Json(answer)).into_response())
}

async fn get_one(
    State(app): State<App>,
    _caller: Caller,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> V2Result<Response> {
    let world = app.world.lock();
    let e = world.endpoints.get(&id).ok_or_else(|| not_found(&id))?;
    Ok(Json(view::endpoint(e, &view::origin(&headers), &app.clock)).into_response())
}

async fn update(
    State(app): State<App>,
    headers: HeaderMap,
    Path(id): Path<String>,
    WriteBody(body): WriteBody,
) -> V2Result<Response> {
    let body: EndpointBody = parse_body(&body)?;
    let now = app.clock.now();
    let (record, released) = {
        let mut world = app.world.lock();
        let current = world
            .endpoints
            .get(&id)
            .cloned()
            .ok_or_else(|| not_found(&id))?;
        let mut record = plan::plan_update(body, &current, &world)?;
        let released = endpoints::commit_update(&mut world, &current, &mut record, now);
        (record, released)
    };
    app.update_runtime(&record, released);
    if released {
        tracing::info!(endpoint = %record.id, version = record.version(), "endpoint release");
    }
    let origin = view::origin(&headers);
    Ok(Json(view::endpoint(&record, &origin, &app.clock)).into_response())
}

async fn delete(
    State(app): State<App>,
    Path(id): Path<String>,
    _writer: Writer,
) -> V2Result<StatusCode> {
    let removed = ENDPOINTS.delete_unused(&mut app.world.lock(), &id)?;
    app.retire_runtime(&removed);
    Ok(StatusCode::NO_CONTENT)
}

/// The record, where its workers are placed, the user id, and the runtime's version and
/// workers.
struct Fleet {
    record: crate::model::EndpointRecord,
    placed: (Option<String>, Option<String>),
    user_id: String,
    version: u64,
    slots: Vec<crate::jobs::rollout::WorkerSlot>,
    /// Why the workers' container cannot start, if a test said so.
    failure: Option<crate::StartFailure>,
    /// The highest CUDA version the workers' GPU type offers (what a failure line cites).
    host_cuda: Option<String>,
}

fn fleet(app: &App, id: &str) -> V2Result<Fleet> {
    let (record, placed, user_id, host_cuda) = {
        let world = app.world.lock();
        let e = world.endpoints.get(id).ok_or_else(|| not_found(id))?;
        let placed = view::placement(e, &world);
        let host_cuda = placed
            .0
            .as_deref()
            .and_then(|g| world.cloud.gpu_type(g))
            .and_then(|g| {
                g.cuda_versions
                    .iter()
                    .max_by(|a, b| crate::pods::cuda_order(a, b))
                    .cloned()
            });
        (e.clone(), placed, world.user_id.clone(), host_cuda)
    };
    let runtime = app.runtime(id);
    let (version, slots) = runtime
        .as_ref()
        .map_or((record.version(), Vec::new()), |rt| rt.workers());
    Ok(Fleet {
        record,
        placed,
        user_id,
        version,
        slots,
        failure: runtime.and_then(|rt| rt.start_failure()),
        host_cuda,
    })
}

async fn workers(
    State(app): State<App>,
    _caller: Caller,
    Path(id): Path<String>,
) -> V2Result<Json<view::WorkersAnswer>> {
    let f = fleet(&app, &id)?;
    let fleet = view::FleetState {
        version: f.version,
        failing: f.failure.is_some(),
    };
    Ok(Json(view::workers(
        &f.record, &f.placed, fleet, &f.slots, &app.clock,
    )))
}

async fn releases(
    State(app): State<App>,
    _caller: Caller,
    Path(id): Path<String>,
) -> V2Result<Json<view::ReleasesAnswer>> {
    let f = fleet(&app, &id)?;
    Ok(Json(view::releases(
        &f.record, &f.user_id, f.version, &f.slots, &app.clock,
    )))
}

async fn worker_logs(
    State(app): State<App>,
    _caller: Caller,
    headers: HeaderMap,
    Path((id, worker_id)): Path<(String, String)>,
    V2Query(query): V2Query<LogQuery>,
) -> V2Result<Response> {
    let last_event_id = headers
        .get("last-event-id")
        .map(|v| v.to_str().unwrap_or("\u{fffd}"));
    let selection = logs::selection(&query, last_event_id)?;
    let f = fleet(&app, &id)?;
    let w = f
        .slots
        .iter()
        .find(|w| w.id == worker_id)
        .ok_or_else(|| logs::worker_not_found(&id, &worker_id))?;
    let image = f
        .record
        .releases
        .iter()
        .find(|r| r.version == w.version)
        .map_or(f.record.container.image.as_str(), |r| r.image.as_str());
    let placed_on = f
        .placed
        .0
        .clone()
        .or_else(|| f.record.cpu.first().map(|c| c.id.clone()))
        .unwrap_or_default();
    let lines = logs::worker_lines(
        &WorkerLife {
            worker_id: &w.id,
            version: w.version,
            image,
            placed_on: &placed_on,
            data_center: f.placed.1.as_deref().unwrap_or_default(),
            started_at: w.started_at,
            failure: f
                .failure
                .map(|failure| failure.log_line(image, f.host_cuda.as_deref())),
        },
        &app.clock,
    );
    let text = logs::event_stream(&logs::select(&lines, &selection));
    Ok(event_stream::answer(text))
}

#[cfg(test)]
mod tests;
