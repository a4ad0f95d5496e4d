//! REST v2 network volumes: `GET,POST /v2/network-volumes`,
//! `GET,PATCH,DELETE /v2/network-volumes/{id}`.
//!
//! The records are v1's (`/v1/networkvolumes` lists the same ones): v2's `dataCenter` is
//! v1's `dataCenterId`; `type` (STANDARD or HIGH_PERFORMANCE) is fixed at creation and
//! defaults to the data center's primary tier. A PATCH may rename and may grow `size`
//! (keeping it is fine, shrinking is a 400). A volume attached to an endpoint or a pod cannot
//! be deleted (400), as over v1.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use super::integer::{integer, opt_integer};
use super::problem::V2Result;
use super::records::{self, V2Shown};
use super::request::{Violations, WriteBody, not_null, parse_body};
use super::rules::Rules;
use crate::collection::VOLUMES;
use crate::ids;
use crate::model::{NetworkVolume, VolumeType};
use crate::rest::default_volume_type;
use crate::state::{App, World};

/// The document's size bounds, GB.
pub const MIN_SIZE_GB: i64 = 10;
pub const MAX_SIZE_GB: i64 = 4096;

pub fn routes() -> Router<App> {
    Router::new()
        .route(
            "/v2/network-volumes",
            get(records::list::<NetworkVolume>).post(create),
        )
        .route(
            "/v2/network-volumes/{id}",
            get(records::get_one::<NetworkVolume>)
                .patch(update)
                .delete(records::delete_unused::<NetworkVolume>),
        )
}

/// The document's `NetworkVolume`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VolumeView<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub size: u32,
    pub data_center: &'a str,
    #[serde(rename = "type")]
    pub volume_type: VolumeType,
}

impl V2Shown for NetworkVolume {
    const LIST_FIELD: &'static str = "networkVolumes";

    fn v2(&self) -> impl Serialize + '_ {
        VolumeView::from(self)
    }
}

impl<'a> From<&'a NetworkVolume> for VolumeView<'a> {
    fn from(v: &'a NetworkVolume) -> Self {
        Self {
            id: &v.id,
            name: &v.name,
            size: v.size,
            data_center: &v.data_center_id,
            volume_type: v.volume_type,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CreateVolume {
    name: String,
    #[serde(deserialize_with = "integer")]
    size: i64,
    data_center: String,
    #[serde(default, rename = "type", deserialize_with = "not_null")]
    volume_type: Option<VolumeType>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct UpdateVolume {
    #[serde(default, deserialize_with = "not_null")]
    name: Option<String>,
    #[serde(default, deserialize_with = "opt_integer")]
    size: Option<i64>,
}

/// Validates a create against the world and builds the volume.
pub fn volume_from_create(bytes: &[u8], world: &World) -> V2Result<NetworkVolume> {
    let body: CreateVolume = parse_body(bytes)?;
    let mut v = Violations::new();
    v.check(!body.name.is_empty(), "name", "must not be empty");
    v.check(
        !body.data_center.is_empty(),
        "dataCenter",
        "must not be empty",
    );
    v.range(
        Some(body.size),
        "size",
        Some(MIN_SIZE_GB),
        Some(MAX_SIZE_GB),
    );
    v.finish()?;
    let mut r = Rules::new();
    match world.data_centers.iter().find(|d| d.id == body.data_center) {
        None => r.fail(
            "dataCenter",
            format!("unknown data center {:?}", body.data_center),
        ),
        Some(dc) => {
            if let Some(t) = body.volume_type {
                r.check(
                    dc.network_volume_types.contains(&t),
                    "type",
                    format!("data center {} does not offer {t:?} volumes", dc.id),
                );
            } else {
                r.check(
                    !dc.network_volume_types.is_empty(),
                    "dataCenter",
                    format!("data center {} offers no network volumes", dc.id),
                );
            }
        }
    }
    r.finish()?;
    Ok(NetworkVolume {
        id: ids::unused(10, |id| world.volumes.contains_key(id)),
        name: body.name,
        size: body.size as u32,
        volume_type: body
            .volume_type
            .unwrap_or_else(|| default_volume_type(world, &body.data_center)),
        data_center_id: body.data_center,
    })
}

/// Validates a patch and applies it to a copy of `current`.
pub fn volume_update(bytes: &[u8], current: &NetworkVolume) -> V2Result<NetworkVolume> {
    let body: UpdateVolume = parse_body(bytes)?;
    let mut v = Violations::new();
    v.check(
        body.name.is_some() || body.size.is_some(),
        "body",
        "must set at least one of name, size",
    );
    if let Some(name) = &body.name {
        v.check(!name.is_empty(), "name", "must not be empty");
    }
    v.range(body.size, "size", Some(MIN_SIZE_GB), Some(MAX_SIZE_GB));
    v.finish()?;
    let mut r = Rules::new();
    if let Some(size) = body.size {
        r.check(
            size >= i64::from(current.size),
            "size",
            format!(
                "must not be below the current size of {} GB (volumes only grow)",
                current.size
            ),
        );
    }
    r.finish()?;
    let mut updated = current.clone();
    if let Some(name) = body.name {
        updated.name = name;
    }
    if let Some(size) = body.size {
        updated.size = size as u32;
    }
    Ok(updated)
}

async fn create(State(app): State<App>, WriteBody(body): WriteBody) -> V2Result<Response> {
    let mut world = app.world.lock();
    let v = volume_from_create(&body, &world)?;
    world.volumes.insert(v.id.clone(), v.clone());
    tracing::info!(volume = %v.id, "network volume created (v2)");
    Ok((StatusCode::CREATED, Json(VolumeView::from(&v))).into_response())
}

async fn update(
    State(app): State<App>,
    Path(id): Path<String>,
    WriteBody(body): WriteBody,
) -> V2Result<Response> {
    let mut world = app.world.lock();
    let current = VOLUMES.find(&world, &id)?;
    let updated = volume_update(&body, current)?;
    world.volumes.insert(id, updated.clone());
    Ok(Json(VolumeView::from(&updated)).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::Fixtures;

    fn world() -> World {
        World::from_fixtures(&Fixtures::built_in()).unwrap()
    }

    fn volume(size: u32) -> NetworkVolume {
        NetworkVolume {
            id: "v".into(),
            name: "n".into(),
            size,
            data_center_id: "EU-RO-1".into(),
            volume_type: VolumeType::Standard,
        }
    }

    #[test]
    fn create_defaults_to_the_primary_tier_and_checks_the_offer() {
        let w = world();
        let v =
            volume_from_create(br#"{"name":"a","size":50,"dataCenter":"EU-RO-1"}"#, &w).unwrap();
        assert_eq!(v.volume_type, default_volume_type(&w, "EU-RO-1"));
        let v = volume_from_create(
            br#"{"name":"a","size":50,"dataCenter":"EU-RO-1","type":"HIGH_PERFORMANCE"}"#,
            &w,
        )
        .unwrap();
        assert_eq!(v.volume_type, VolumeType::HighPerformance);
        for (body, status, field) in [
            (
                r#"{"name":"a","size":5,"dataCenter":"EU-RO-1"}"#,
                422,
                "size",
            ),
            (
                r#"{"name":"a","size":4097,"dataCenter":"EU-RO-1"}"#,
                422,
                "size",
            ),
            (
                r#"{"name":"","size":50,"dataCenter":"EU-RO-1"}"#,
                422,
                "name",
            ),
            (r#"{"size":50,"dataCenter":"EU-RO-1"}"#, 422, "name"),
            (
                r#"{"name":"a","size":50,"dataCenterId":"EU-RO-1"}"#,
                422,
                "dataCenter",
            ),
            (
                r#"{"name":"a","size":50,"dataCenter":"EU-RO-1","type":"FAST"}"#,
                422,
                "type",
            ),
            (
                r#"{"name":"a","size":50,"dataCenter":"MARS-1"}"#,
                400,
                "dataCenter",
            ),
            (
                r#"{"name":"a","size":50,"dataCenter":"US-TX-3","type":"HIGH_PERFORMANCE"}"#,
                400,
                "type",
            ),
        ] {
            let p = volume_from_create(body.as_bytes(), &w).unwrap_err();
            assert_eq!(p.status.as_u16(), status, "{body}: {p:?}");
            assert!(
                p.errors.iter().any(|e| e.starts_with(field)),
                "{body}: {p:?}"
            );
        }
    }

    #[test]
    fn patch_only_grows() {
        let v = volume(100);
        assert_eq!(volume_update(br#"{"size":200}"#, &v).unwrap().size, 200);
        assert_eq!(volume_update(br#"{"size":100}"#, &v).unwrap().size, 100);
        assert_eq!(volume_update(br#"{"name":"m"}"#, &v).unwrap().name, "m");
        let p = volume_update(br#"{"size":50}"#, &v).unwrap_err();
        assert_eq!(p.status.as_u16(), 400);
        assert!(p.errors[0].starts_with("size: must not be below"));
        for body in [
            r#"{}"#,
            r#"{"size":9}"#,
            r#"{"name":""}"#,
            r#"{"type":"STANDARD"}"#,
        ] {
            let p = volume_update(body.as_bytes(), &v).unwrap_err();
            assert_eq!(p.status.as_u16(), 422, "{body}");
        }
    }
}
