//! `/v2/clusters`: Instant Clusters. A create places `podCount` identical member pods, one
//! per machine, all in one data center, or answers the pod create's capacity 400; the
//! members are real pods (listed by `GET /v2/pods?includeClusterPods=true` and
//! `/v2/clusters/{id}/pods`, booting on the emulator clock, billed under
//! `/v2/billing/clusters`) that the pod endpoints refuse to change (409). A PATCH only
//! renames; a DELETE terminates every member and frees its GPUs.

mod body;
mod view;

pub use body::*;
pub use view::*;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use super::pods::{placement_problem, pod_json};
use super::problem::{Problem, V2Result};
use super::request::{Caller, WriteBody, Writer, parse_body};
use crate::state::{App, World};
use crate::world::clusters::Cluster;

pub fn routes() -> Router<App> {
    Router::new()
        .route("/v2/clusters", get(list).post(create))
        .route("/v2/clusters/{id}", get(read).patch(update).delete(delete))
        .route("/v2/clusters/{id}/pods", get(members))
}

fn not_found(id: &str) -> Problem {
    Problem::not_found(format!("cluster {id} not found"))
}

fn find<'w>(world: &'w World, id: &str) -> V2Result<&'w Cluster> {
    world.clusters.get(id).ok_or_else(|| not_found(id))
}

async fn list(State(app): State<App>, _caller: Caller) -> Response {
    super::listing::written_off_the_workers(move || clusters_listing(&app)).await
}

/// The answer to `GET /v2/clusters`: `{"clusters": [...]}` in id order. The world's lock is
/// held only to take the snapshots (pointers, see [`snapshots`]); the answer is built after.
pub fn clusters_listing(app: &App) -> Vec<u8> {
    let now = app.clock.now();
    let snapshots = snapshots(&app.world.lock());
    super::listing::list_json(Some("clusters"), &snapshots, 512, |s, out| {
        serde_json::to_writer(out, &snapshot_view(app, s, now))
    })
}

async fn create(State(app): State<App>, WriteBody(body): WriteBody) -> V2Result<Response> {
    let b: CreateClusterBody = parse_body(&body)?;
    check_create(&b)?;
    let now = app.clock.now();
    let mut world = app.world.lock();
    let spec = cluster_spec(&world, b)?;
    let id = world
        .create_cluster(spec, now)
        .map_err(placement_problem)?
        .id
        .clone();
    tracing::info!(cluster = %id, "cluster created over REST v2");
    let answer = cluster_json(&app, &world, find(&world, &id)?, now);
    Ok((StatusCode::CREATED, Json(answer)).into_response())
}

async fn read(
    State(app): State<App>,
    _caller: Caller,
    Path(id): Path<String>,
) -> V2Result<Response> {
    let now = app.clock.now();
    let world = app.world.lock();
    let c = find(&world, &id)?;
    Ok(Json(cluster_json(&app, &world, c, now)).into_response())
}

async fn update(
    State(app): State<App>,
    Path(id): Path<String>,
    WriteBody(body): WriteBody,
) -> V2Result<Response> {
    let name = check_update(parse_body(&body)?)?;
    let now = app.clock.now();
    let mut world = app.world.lock();
    world
        .clusters
        .get_mut(&id)
        .ok_or_else(|| not_found(&id))?
        .name = name;
    let c = find(&world, &id)?;
    Ok(Json(cluster_json(&app, &world, c, now)).into_response())
}

async fn delete(
    State(app): State<App>,
    Path(id): Path<String>,
    _writer: Writer,
) -> V2Result<StatusCode> {
    let now = app.clock.now();
    app.world
        .lock()
        .delete_cluster(&id, now)
        .ok_or_else(|| not_found(&id))?;
    tracing::info!(cluster = %id, "cluster deleted over REST v2");
    Ok(StatusCode::NO_CONTENT)
}

async fn members(
    State(app): State<App>,
    _caller: Caller,
    Path(id): Path<String>,
) -> V2Result<Response> {
    let now = app.clock.now();
    let world = app.world.lock();
    find(&world, &id)?;
    let pods: Vec<Value> = world
        .cloud
        .members(&id)
        .into_iter()
        .map(|p| pod_json(&app, &world, p, now))
        .collect();
    Ok(Json(json!({ "pods": pods })).into_response())
}

#[cfg(test)]
mod tests;
