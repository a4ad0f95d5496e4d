//! The bodies REST v2 takes for clusters (create, rename) and the checks that refuse them:
//! 422 for what the document's schema forbids (unknown fields such as `registry`, a
//! `podCount` outside 2..=250, a rename with no name), 400 for the catalog's rules (unknown
//! GPU type, more GPUs per pod than the type's `maxCount`). What is left is the pod create's
//! own request, which every member is deployed from, so the container settings, data
//! centers and mounts are checked exactly as a pod's.

use std::collections::BTreeMap;

use axum::http::StatusCode;
use serde::Deserialize;

use crate::state::World;
use crate::v2::pods::{CreateGpu, CreatePodBody, Mounts, check_mounts, deploy_request};
use crate::v2::problem::{Problem, V2Result};
use crate::v2::request::{Int, Violations, not_null};
use crate::world::clusters::{ClusterKind, ClusterSpec};

// Nested objects of the bodies: only a JSON object reads as one.
crate::v2::object::objects_only!(Compute);

/// The document's bounds on `compute.podCount`.
pub const MIN_PODS: i64 = 2;
pub const MAX_PODS: i64 = 250;

/// The document's `ClusterCompute`.
#[derive(Debug, Deserialize)]
#[serde(remote = "Self", rename_all = "camelCase", deny_unknown_fields)]
pub struct Compute {
    pub gpu_type_id: String,
    pub gpu_count_per_pod: Int,
    pub pod_count: Int,
}

/// The document's `CreateClusterRequest`: `BaseContainerConfig` (no `registry`) and the
/// cluster's own fields, nothing else.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateClusterBody {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: ClusterKind,
    pub compute: Compute,
    #[serde(default, deserialize_with = "not_null")]
    pub image: Option<String>,
    #[serde(default, deserialize_with = "not_null")]
    pub args: Option<String>,
    #[serde(default, deserialize_with = "not_null")]
    pub disk: Option<Int>,
    #[serde(default, deserialize_with = "not_null")]
    pub env: Option<BTreeMap<String, String>>,
    #[serde(default, deserialize_with = "not_null")]
    pub ports: Option<Vec<String>>,
    #[serde(default, deserialize_with = "not_null")]
    pub data_center_ids: Option<Vec<String>>,
    #[serde(default, deserialize_with = "not_null")]
    pub mounts: Option<Mounts>,
    #[serde(default, deserialize_with = "not_null")]
    pub start_jupyter: Option<bool>,
    #[serde(default, deserialize_with = "not_null")]
    pub start_ssh: Option<bool>,
}

/// The document's `UpdateClusterRequest`: a rename.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateClusterBody {
    #[serde(default, deserialize_with = "not_null")]
    pub name: Option<String>,
}

/// Schema rules serde cannot express: lengths and ranges.
pub fn check_create(b: &CreateClusterBody) -> V2Result<()> {
    let mut v = Violations::new();
    v.check(!b.name.is_empty(), "name", "must not be empty");
    v.check(
        !b.compute.gpu_type_id.is_empty(),
        "compute.gpuTypeId",
        "must not be empty",
    );
    v.range(
        Some(b.compute.gpu_count_per_pod.0),
        "compute.gpuCountPerPod",
        Some(1),
        None,
    );
    v.range(
        Some(b.compute.pod_count.0),
        "compute.podCount",
        Some(MIN_PODS),
        Some(MAX_PODS),
    );
    v.range(b.disk.map(|d| d.0), "disk", Some(1), None);
    if let Some(m) = &b.mounts {
        check_mounts(&mut v, m);
    }
    v.finish()
}

/// The new name of a rename (`minProperties: 1`: the body must carry it).
pub fn check_update(b: UpdateClusterBody) -> V2Result<String> {
    let mut v = Violations::new();
    match &b.name {
        None => v.fail(
            "body",
            "must set name, the one field a cluster update changes",
        ),
        Some(name) => v.check(!name.is_empty(), "name", "must not be empty"),
    }
    v.finish()?;
    Ok(b.name.unwrap_or_default())
}

/// The catalog's rules of a create (400), then the cluster as the world creates it.
pub fn cluster_spec(world: &World, b: CreateClusterBody) -> V2Result<ClusterSpec> {
    let compute = &b.compute;
    let gpu = world.cloud.gpu_type(&compute.gpu_type_id).ok_or_else(|| {
        Problem::bad_request(format!(
            "compute.gpuTypeId: unknown GPU type {:?}",
            compute.gpu_type_id
        ))
    })?;
    let per_pod = compute.gpu_count_per_pod;
    if per_pod.0 > i64::from(gpu.max_gpu_count) {
        return Err(Problem::bad_request(format!(
            "compute.gpuCountPerPod: at most {} GPUs of {} fit one pod (got {per_pod})",
            gpu.max_gpu_count, gpu.id
        )));
    }
    // No image is valid (the document leaves it optional; the members then have none),
    // but one given must be an image reference, which a blank string is not.
    if b.image.as_deref().is_some_and(|i| i.trim().is_empty()) {
        return Err(Problem::bad_request("image: must not be empty"));
    }
    let mut env = b.env.unwrap_or_default();
    if b.start_jupyter == Some(true) && !env.contains_key("JUPYTER_PASSWORD") {
        env.insert("JUPYTER_PASSWORD".into(), crate::ids::short(20));
    }
    let member = CreatePodBody {
        name: b.name.clone(),
        image: b.image,
        args: b.args,
        disk: b.disk,
        env: Some(env),
        ports: b.ports,
        gpu: Some(CreateGpu {
            id: compute.gpu_type_id.clone(),
            count: Some(per_pod),
            allowed_cuda_versions: None,
            min_cuda_version: None,
        }),
        data_center_ids: b.data_center_ids,
        mounts: b.mounts,
        start_jupyter: b.start_jupyter,
        start_ssh: b.start_ssh,
        ..CreatePodBody::default()
    };
    // The pod create answers an unknown network volume 404; a cluster create documents no
    // 404, and the volume is a rule of the body like any other reference here.
    let member = deploy_request(world, &member).map_err(|p| {
        if p.status == StatusCode::NOT_FOUND {
            Problem::bad_request(p.detail)
        } else {
            p
        }
    })?;
    Ok(ClusterSpec {
        name: b.name,
        kind: b.kind,
        pod_count: compute.pod_count.as_u32(),
        member,
    })
}
