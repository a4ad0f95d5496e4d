//! The one endpoint record both REST surfaces change (v1 `/v1/endpoints`, v2
//! `/v2/serverless`): how its v1 and v2 fields follow each other, its releases, the
//! template made for an endpoint created without one, and the hookup to its runtime.
//!
//! Mapping between the surfaces:
//! - v1 `gpuTypeIds` are the GPU types of the v2 `gpu.pools` minus `gpu.excludedTypes`, in
//!   pool order then catalog order; setting `gpuTypeIds` over v1 picks the pools of those
//!   types and excludes the rest of each pool.
//! - v1 `networkVolumeId` is the first of v2 `networkVolumes`.
//! - v1 `flashboot` is true for v2 `FLASHBOOT` and `PRIORITY_FLASHBOOT`.
//! - v1 `scalerValue` is the v2 `queueDelay` rounded (at least 1) or the `requestCount`.
//! - v1 `executionTimeoutMs` is v2 `timeout`.
//! - the container settings (v2 `image`, `args`, `disk`, `ports`, `env`, `registry`) are a
//!   snapshot of the template taken when the endpoint is created or (over v1) re-pointed to
//!   another template.

use serde_json::{Value, json};

use super::World;
use crate::ids;
use crate::model::{ContainerSettings, EndpointRecord, Release, ReleaseChange, Template};
use crate::workers::WorkerSettings;

/// One stale worker is replaced every this many emulated milliseconds after a release,
/// oldest first (see [`crate::jobs::rollout`]).
pub const ROLLOVER_INTERVAL_MS: u64 = 30_000;

/// The container settings a template gives an endpoint.
pub fn snapshot(t: &Template) -> ContainerSettings {
    ContainerSettings {
        image: t.image_name.clone(),
        args: t.docker_start_cmd.join(" "),
        disk: t.container_disk_in_gb,
        ports: t.ports.clone(),
        env: t.env.clone(),
        registry: t.registry.clone(),
    }
}

/// The serverless pool of a GPU type (`None`: not offered to serverless).
pub fn pool_of<'a>(world: &'a World, gpu_type_id: &str) -> Option<&'a str> {
    world
        .cloud
        .gpu_type(gpu_type_id)
        .and_then(|g| g.pool.as_deref())
}

/// Whether any GPU type of the catalog is in `pool`.
pub fn pool_exists(world: &World, pool: &str) -> bool {
    world
        .cloud
        .gpu_types
        .iter()
        .any(|g| g.pool.as_deref() == Some(pool))
}

/// The GPU types of `pools` minus `excluded`: pool order, then catalog order.
pub fn types_in_pools(world: &World, pools: &[String], excluded: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for pool in pools {
        for g in &world.cloud.gpu_types {
            if g.pool.as_deref() == Some(pool.as_str())
                && !excluded.contains(&g.id)
                && !out.contains(&g.id)
            {
                out.push(g.id.clone());
            }
        }
    }
    out
}

/// The pools holding `types` (first appearance first) and the other types of those pools.
pub fn pools_for_types(world: &World, types: &[String]) -> (Vec<String>, Vec<String>) {
    let mut pools: Vec<String> = Vec::new();
    for t in types {
        if let Some(p) = pool_of(world, t)
            && !pools.iter().any(|q| q == p)
        {
            pools.push(p.to_string());
        }
    }
    let excluded = types_in_pools(world, &pools, &[])
        .into_iter()
        .filter(|t| !types.contains(t))
        .collect();
    (pools, excluded)
}

/// Fills the v2 fields of a record that only has its v1 fields (a fixture, a v1 create).
pub fn hydrate(e: &mut EndpointRecord, world: &World, now: u64) {
    if e.container.image.is_empty()
        && let Some(t) = world.templates.get(&e.template_id)
    {
        e.container = snapshot(t);
    }
    if e.gpu_pools.is_empty() && e.cpu.is_empty() {
        (e.gpu_pools, e.excluded_gpu_types) = pools_for_types(world, &e.gpu_type_ids);
    }
    if e.network_volume_ids.is_empty()
        && let Some(v) = &e.network_volume_id
    {
        e.network_volume_ids = vec![v.clone()];
    }
    if e.releases.is_empty() {
        e.created_at_ms = e.created_at_ms.max(now);
        e.releases.push(first_release(e));
    }
}

/// Carries a v1 update (`old` → `new`) over to the v2 fields of `new`.
pub fn follow_v1_update(old: &EndpointRecord, new: &mut EndpointRecord, world: &World) {
    if new.template_id != old.template_id
        && let Some(t) = world.templates.get(&new.template_id)
    {
        new.container = snapshot(t);
    }
    if new.gpu_type_ids != old.gpu_type_ids {
        (new.gpu_pools, new.excluded_gpu_types) = pools_for_types(world, &new.gpu_type_ids);
    }
    if new.network_volume_id != old.network_volume_id {
        new.network_volume_ids = new.network_volume_id.iter().cloned().collect();
    }
    if !new.flashboot {
        new.priority_flashboot = false;
    }
    if new.scaler_value != old.scaler_value || new.scaler_type != old.scaler_type {
        new.queue_delay = None;
    }
}

/// The worker configuration a release covers, by v2 field name. Name, worker bounds,
/// scaling, timeout and flashboot reach running workers at once and make no release.
fn release_fields(e: &EndpointRecord) -> Vec<(&'static str, Value)> {
    let gpu = e.cpu.is_empty();
    vec![
        ("image", json!(e.container.image)),
        ("args", json!(e.container.args)),
        ("disk", json!(e.container.disk)),
        ("ports", json!(e.container.ports)),
        ("env", json!(e.container.env)),
        ("registry", json!(e.container.registry)),
        (
            "gpu.pools",
            if gpu { json!(e.gpu_pools) } else { Value::Null },
        ),
        (
            "gpu.excludedTypes",
            if gpu {
                json!(e.excluded_gpu_types)
            } else {
                Value::Null
            },
        ),
        (
            "gpu.count",
            if gpu { json!(e.gpu_count) } else { Value::Null },
        ),
        (
            "gpu.allowedCudaVersions",
            if gpu {
                json!(e.allowed_cuda_versions)
            } else {
                Value::Null
            },
        ),
        ("gpu.minCudaVersion", json!(e.min_cuda_version)),
        ("cpu", if gpu { Value::Null } else { json!(e.cpu) }),
        ("dataCenterIds", json!(e.data_center_ids)),
        ("networkVolumes", json!(e.network_volume_ids)),
    ]
}

/// What changed in the worker configuration between two versions of a record.
pub fn release_diff(old: &EndpointRecord, new: &EndpointRecord) -> Vec<ReleaseChange> {
    release_fields(old)
        .into_iter()
        .zip(release_fields(new))
        .filter(|((_, a), (_, b))| a != b)
        .map(|((field, old), (_, new))| ReleaseChange {
            field: field.to_string(),
            old,
            new,
        })
        .collect()
}

/// Version 1: every configured field shows as added.
pub fn first_release(e: &EndpointRecord) -> Release {
    Release {
        id: ids::short(8),
        version: 1,
        created_at_ms: e.created_at_ms,
        image: e.container.image.clone(),
        diff: release_fields(e)
            .into_iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(field, new)| ReleaseChange {
                field: field.to_string(),
                old: Value::Null,
                new,
            })
            .collect(),
    }
}

/// Appends a release to `new` when its worker configuration differs from `old`'s; returns
/// whether it did.
pub fn record_release(old: &EndpointRecord, new: &mut EndpointRecord, now: u64) -> bool {
    let diff = release_diff(old, new);
    if diff.is_empty() {
        return false;
    }
    new.releases.push(Release {
        id: ids::short(8),
        version: old.version() + 1,
        created_at_ms: now,
        image: new.container.image.clone(),
        diff,
    });
    true
}

/// Stores an updated record: a release when its worker configuration changed, the
/// template the emulator made for it dropped when v1 re-pointed it to another one, and that
/// template kept in step otherwise. Returns whether a release was made.
pub fn commit_update(
    world: &mut World,
    old: &EndpointRecord,
    new: &mut EndpointRecord,
    now: u64,
) -> bool {
    let released = record_release(old, new, now);
    world.endpoints.insert(new.id.clone(), new.clone());
    if new.template_id != old.template_id {
        release_bound_template(world, &old.template_id, &old.id);
    }
    sync_bound_template(world, new);
    released
}

/// The template made for an endpoint created over v2 without `templateId`, so that v1 shows
/// a `templateId` that resolves; it goes when the endpoint goes.
pub fn bound_template(e: &EndpointRecord) -> Template {
    let c = &e.container;
    Template {
        id: ids::short(10),
        name: format!("{}__template__{}", e.name, e.id),
        image_name: c.image.clone(),
        is_serverless: true,
        container_disk_in_gb: c.disk,
        volume_in_gb: 0,
        volume_mount_path: "/workspace".into(),
        ports: c.ports.clone(),
        env: c.env.clone(),
        docker_start_cmd: c.args.split_whitespace().map(str::to_string).collect(),
        registry: c.registry.clone(),
        public: false,
        category: crate::model::TemplateCategory::Nvidia,
        start_ssh: false,
        start_jupyter: false,
        allowed_cuda_versions: e.allowed_cuda_versions.clone(),
        bound_endpoint: Some(e.id.clone()),
    }
}

/// Keeps the endpoint's own template (if the emulator made it) showing its settings.
pub fn sync_bound_template(world: &mut World, e: &EndpointRecord) {
    if let Some(t) = world.templates.get_mut(&e.template_id)
        && t.bound_endpoint.as_deref() == Some(e.id.as_str())
    {
        let c = &e.container;
        t.image_name = c.image.clone();
        t.docker_start_cmd = c.args.split_whitespace().map(str::to_string).collect();
        t.container_disk_in_gb = c.disk;
        t.ports = c.ports.clone();
        t.env = c.env.clone();
        t.registry = c.registry.clone();
        t.allowed_cuda_versions = e.allowed_cuda_versions.clone();
    }
}

/// The template made for the removed endpoint `e` goes with it (see
/// [`release_bound_template`]).
pub fn release_template_of(world: &mut World, e: &EndpointRecord) {
    release_bound_template(world, &e.template_id, &e.id);
}

/// Endpoint `endpoint_id` no longer uses `template_id`: the template made for it goes, unless
/// another endpoint was pointed at it over v1 meanwhile; then it stays as a plain template.
fn release_bound_template(world: &mut World, template_id: &str, endpoint_id: &str) {
    let Some(t) = world.templates.get_mut(template_id) else {
        return;
    };
    if t.bound_endpoint.as_deref() != Some(endpoint_id) {
        return;
    }
    if world
        .endpoints
        .values()
        .any(|e| e.template_id == template_id && e.id != endpoint_id)
    {
        t.bound_endpoint = None;
    } else {
        world.templates.remove(template_id);
    }
}

/// Why a template cannot be deleted, if it cannot.
pub fn template_in_use(world: &World, template_id: &str) -> Option<String> {
    if let Some(e) = world
        .endpoints
        .values()
        .find(|e| e.template_id == template_id)
    {
        return Some(format!(
            "templateId: template {template_id} is used by endpoint {}",
            e.id
        ));
    }
    world
        .cloud
        .pods()
        .find(|p| p.template_id.as_deref() == Some(template_id))
        .map(|p| format!("templateId: template {template_id} is used by pod {}", p.id))
}

/// Why a network volume cannot be deleted, if it cannot.
pub fn volume_in_use(world: &World, volume_id: &str) -> Option<String> {
    if let Some(e) = world.endpoints.values().find(|e| {
        e.network_volume_id.as_deref() == Some(volume_id)
            || e.network_volume_ids.iter().any(|v| v == volume_id)
    }) {
        return Some(format!(
            "networkVolumeId: volume {volume_id} is attached to endpoint {}",
            e.id
        ));
    }
    world
        .cloud
        .pods()
        .find(|p| p.network_volume_id.as_deref() == Some(volume_id))
        .map(|p| {
            format!(
                "networkVolumeId: volume {volume_id} is attached to pod {}",
                p.id
            )
        })
}

/// Most workers the job runtime runs for one endpoint at once: each is a task of this
/// process. The record keeps the counts as sent (REST v2 bounds them only from below); a
/// fleet beyond this is more than the emulator has room for, as 1000 is v1's own bound.
pub const RUNTIME_WORKERS_MAX: u64 = 1000;

/// Worker settings of an endpoint record, in emulated milliseconds. The worker counts are
/// capped at [`RUNTIME_WORKERS_MAX`] and the scaler value at `u32::MAX` (the runtime counts
/// jobs in 32 bits, so a larger value scales exactly alike).
pub fn worker_settings(e: &EndpointRecord) -> WorkerSettings {
    let fleet = |n: u64| n.min(RUNTIME_WORKERS_MAX) as u32;
    WorkerSettings {
        min: fleet(e.workers_min),
        max: fleet(e.workers_max),
        idle_timeout_ms: u64::from(e.idle_timeout) * 1000,
        execution_timeout_ms: e.execution_timeout_ms,
        scaler_type: e.scaler_type,
        scaler_value: u32::try_from(e.scaler_value).unwrap_or(u32::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collection::ENDPOINTS;
    use crate::fixtures::Fixtures;

    fn world() -> World {
        World::from_fixtures(&Fixtures::built_in()).unwrap()
    }

    fn record(world: &World) -> EndpointRecord {
        world.endpoints.values().next().unwrap().clone()
    }

    #[test]
    fn pools_and_types_map_both_ways() {
        let w = world();
        let types: Vec<String> = w.cloud.gpu_types.iter().map(|g| g.id.clone()).collect();
        let first = &types[0];
        let pool = pool_of(&w, first).unwrap().to_string();
        let (pools, excluded) = pools_for_types(&w, std::slice::from_ref(first));
        assert_eq!(pools, vec![pool.clone()]);
        assert!(!excluded.contains(first));
        assert_eq!(types_in_pools(&w, &pools, &excluded), vec![first.clone()]);
        let whole = types_in_pools(&w, &pools, &[]);
        assert_eq!(whole.len(), excluded.len() + 1);
        assert!(whole.iter().all(|t| pool_of(&w, t) == Some(pool.as_str())));
    }

    #[test]
    fn fixture_endpoints_are_hydrated() {
        let w = world();
        let e = record(&w);
        let t = &w.templates[&e.template_id];
        assert_eq!(e.container.image, t.image_name);
        assert!(!e.gpu_pools.is_empty());
        assert_eq!(
            types_in_pools(&w, &e.gpu_pools, &e.excluded_gpu_types),
            e.gpu_type_ids
        );
        assert_eq!(e.version(), 1);
        assert!(e.releases[0].diff.iter().any(|c| c.field == "image"));
    }

    #[test]
    fn only_worker_configuration_makes_a_release() {
        let w = world();
        let old = record(&w);
        let mut new = old.clone();
        new.workers_max += 5;
        new.name = "renamed".into();
        new.execution_timeout_ms += 1000;
        assert!(!record_release(&old, &mut new, 10));
        new.container.image = "img:2".into();
        new.container.env.insert("A".into(), "1".into());
        assert!(record_release(&old, &mut new, 10));
        assert_eq!(new.version(), 2);
        let fields: Vec<&str> = new.releases[1]
            .diff
            .iter()
            .map(|c| c.field.as_str())
            .collect();
        assert_eq!(fields, vec!["image", "env"]);
        assert_eq!(new.releases[1].image, "img:2");
        assert_eq!(new.releases[1].created_at_ms, 10);
    }

    #[test]
    fn v1_updates_follow_into_v2_fields() {
        let w = world();
        let old = record(&w);
        let mut new = old.clone();
        new.template_id = "tmpl-pytorch".into();
        new.gpu_type_ids = vec![w.cloud.gpu_types.last().unwrap().id.clone()];
        new.network_volume_id = Some("nv-demo0001".into());
        follow_v1_update(&old, &mut new, &w);
        assert_eq!(new.container.image, w.templates["tmpl-pytorch"].image_name);
        assert_eq!(
            types_in_pools(&w, &new.gpu_pools, &new.excluded_gpu_types),
            new.gpu_type_ids
        );
        assert_eq!(new.network_volume_ids, vec!["nv-demo0001".to_string()]);
    }

    #[test]
    fn bound_template_goes_with_its_endpoint() {
        let mut w = world();
        let mut e = record(&w);
        e.id = "ep-new".into();
        let t = bound_template(&e);
        e.template_id = t.id.clone();
        w.templates.insert(t.id.clone(), t.clone());
        w.endpoints.insert(e.id.clone(), e.clone());
        assert!(template_in_use(&w, &t.id).is_some());
        e.container.image = "img:3".into();
        sync_bound_template(&mut w, &e);
        assert_eq!(w.templates[&t.id].image_name, "img:3");
        ENDPOINTS.delete_unused(&mut w, "ep-new").unwrap();
        assert!(!w.templates.contains_key(&t.id));
        // A user's own template stays when its endpoint goes.
        let first = record(&w);
        ENDPOINTS.delete_unused(&mut w, &first.id).unwrap();
        assert!(w.templates.contains_key(&first.template_id));
    }

    #[test]
    fn a_bound_template_another_endpoint_uses_stays() {
        let mut w = world();
        let mut owner = record(&w);
        owner.id = "ep-owner".into();
        let t = bound_template(&owner);
        owner.template_id = t.id.clone();
        let mut other = owner.clone();
        other.id = "ep-other".into();
        w.templates.insert(t.id.clone(), t.clone());
        w.endpoints.insert(owner.id.clone(), owner.clone());
        w.endpoints.insert(other.id.clone(), other);
        ENDPOINTS.delete_unused(&mut w, "ep-owner").unwrap();
        assert_eq!(w.templates[&t.id].bound_endpoint, None);
        assert!(template_in_use(&w, &t.id).is_some());
    }
}
