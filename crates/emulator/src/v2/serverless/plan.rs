//! What a `/v2/serverless` create or update does to the endpoint record, decided against the
//! world without touching it: the template resolved (404, or 422 when not serverless), the
//! rules checked (400 listing each), the v2 fields written and the v1 fields derived from
//! them.

use super::body::{EndpointBody, FlashBoot, GpuBody};
use crate::ids;
use crate::model::{
    ContainerSettings, CpuSelection, EndpointRecord, EndpointType, PublicTemplate, ScalerType,
    Template,
};
use crate::state::World;
use crate::v2::container::ContainerPatch;
use crate::v2::problem::{Problem, V2Result};
use crate::v2::rules::{self, Rules};
use crate::world::endpoints::{self, pool_exists, pool_of, types_in_pools};

/// Default execution timeout of a v2 create, ms.
pub const DEFAULT_TIMEOUT_MS: u64 = 300_000;
/// Default idle timeout of a v2 create, s.
pub const DEFAULT_IDLE_TIMEOUT_S: u32 = 10;
/// Container disk of an endpoint created without a template and without `disk`, GB.
pub const DEFAULT_DISK_GB: u64 = 10;

/// The outcome of a create: the record, and the template to store for it when it was not
/// created from one of the account's own templates.
#[derive(Debug, Clone)]
pub struct Created {
    pub record: EndpointRecord,
    pub bound_template: Option<Template>,
}

/// A template a create or update names: one of the account's or of the public catalog.
enum Source<'a> {
    Own(&'a Template),
    Public(&'a PublicTemplate),
}

impl Source<'_> {
    fn settings(&self) -> ContainerSettings {
        match self {
            Self::Own(t) => endpoints::snapshot(t),
            Self::Public(t) => ContainerSettings {
                image: t.image_name.clone(),
                args: t.docker_args.clone(),
                disk: t.container_disk_in_gb,
                ports: t.ports.clone(),
                env: t.env.clone(),
                registry: None,
            },
        }
    }

    fn allowed_cuda_versions(&self) -> &[String] {
        match self {
            Self::Own(t) => &t.allowed_cuda_versions,
            Self::Public(t) => &t.allowed_cuda_versions,
        }
    }
}

fn resolve<'a>(id: &str, world: &'a World) -> V2Result<Source<'a>> {
    let (source, serverless) = if let Some(t) = world.templates.get(id) {
        (Source::Own(t), t.is_serverless)
    } else if let Some(t) = world.public_templates.iter().find(|t| t.id == id) {
        (Source::Public(t), t.is_serverless)
    } else {
        return Err(Problem::not_found(format!("template {id} not found")));
    };
    if !serverless {
        return Err(Problem::unprocessable(vec![format!(
            "templateId: template {id} is not a serverless template"
        )]));
    }
    Ok(source)
}

/// Validates a create and builds the record.
pub fn plan_create(body: EndpointBody, world: &World, now: u64) -> V2Result<Created> {
    body.schema(true)?;
    let source = match &body.template_id {
        Some(id) => Some(resolve(id, world)?),
        None => None,
    };
    let mut r = Rules::new();
    match (&body.gpu, &body.cpu) {
        (None, None) => r.fail("gpu", "set exactly one of gpu or cpu (neither is set)"),
        (Some(_), Some(_)) => r.fail("gpu", "set exactly one of gpu or cpu (both are set)"),
        _ => {}
    }
    r.finish()?;

    let mut e = EndpointRecord::with_defaults(ids::short(14));
    e.created_at_ms = now;
    e.endpoint_type = body.endpoint_type.unwrap_or_default();
    e.idle_timeout = DEFAULT_IDLE_TIMEOUT_S;
    e.execution_timeout_ms = DEFAULT_TIMEOUT_MS;
    let patch = container_patch(&body, source.as_ref());
    let mut container = ContainerSettings {
        disk: DEFAULT_DISK_GB,
        ..ContainerSettings::default()
    };
    let mut r = Rules::new();
    patch.rules(world, &mut r);
    patch.apply(&mut container);
    e.container = container;
    if let Some(gpu) = &body.gpu {
        let mut gpu = gpu.clone();
        // The template's CUDA set seeds a GPU create that states neither constraint.
        if gpu.allowed_cuda_versions.is_none()
            && gpu.min_cuda_version.is_none()
            && let Some(s) = &source
        {
            gpu.allowed_cuda_versions = Some(s.allowed_cuda_versions().to_vec());
        }
        apply_gpu(&mut e, &gpu, world, &mut r);
    }
    complete(&mut e, &body, world, r)?;
    let bound_template = match &source {
        // Another endpoint's own template is copied, not shared: it goes with that endpoint.
        Some(Source::Own(t)) if t.bound_endpoint.is_none() => {
            e.template_id = t.id.clone();
            None
        }
        _ => {
            let t = endpoints::bound_template(&e);
            e.template_id = t.id.clone();
            Some(t)
        }
    };
    e.releases.push(endpoints::first_release(&e));
    Ok(Created {
        record: e,
        bound_template,
    })
}

/// Validates an update and applies it to a copy of `current`.
pub fn plan_update(
    body: EndpointBody,
    current: &EndpointRecord,
    world: &World,
) -> V2Result<EndpointRecord> {
    body.schema(false)?;
    let cpu_endpoint = !current.cpu.is_empty();
    let mut r = Rules::new();
    match (&body.gpu, &body.cpu) {
        (Some(_), Some(_)) => r.fail("gpu", "set at most one of gpu or cpu"),
        (Some(_), None) if cpu_endpoint => r.fail(
            "gpu",
            "this is a CPU endpoint; the compute family cannot change",
        ),
        (None, Some(_)) if !cpu_endpoint => r.fail(
            "cpu",
            "this is a GPU endpoint; the compute family cannot change",
        ),
        _ => {}
    }
    r.finish()?;
    let source = match &body.template_id {
        Some(id) => Some(resolve(id, world)?),
        None => None,
    };
    let mut e = current.clone();
    let patch = container_patch(&body, source.as_ref());
    let mut r = Rules::new();
    patch.rules(world, &mut r);
    patch.apply(&mut e.container);
    if let Some(gpu) = &body.gpu {
        apply_gpu(&mut e, gpu, world, &mut r);
    }
    complete(&mut e, &body, world, r)?;
    Ok(e)
}

/// The body's container fields, over the settings of the template it names, if any.
fn container_patch(body: &EndpointBody, source: Option<&Source<'_>>) -> ContainerPatch {
    match source {
        Some(s) => body.container().over_template(&s.settings()),
        None => body.container(),
    }
}

/// What a create and an update do once the GPU selection is applied: the CPU selection,
/// the settings both take, the record's own rules (`r` holds the ones found so far), then
/// the v1 fields derived from the result.
fn complete(
    e: &mut EndpointRecord,
    body: &EndpointBody,
    world: &World,
    mut r: Rules,
) -> V2Result<()> {
    if let Some(cpu) = &body.cpu {
        apply_cpu(e, cpu, world, &mut r);
    }
    apply_common(e, body, world, &mut r);
    check_record(e, body, world, &mut r);
    r.finish()?;
    derive_v1(e, world);
    Ok(())
}

/// A GPU selection (create or patch semantics: `pools` replaces pools and exclusions).
fn apply_gpu(e: &mut EndpointRecord, gpu: &GpuBody, world: &World, r: &mut Rules) {
    if let Some(pools) = &gpu.pools {
        for p in pools {
            r.check(
                pool_exists(world, p),
                "gpu.pools",
                format!("unknown pool {p:?}"),
            );
        }
        let mut excluded: Vec<String> = Vec::new();
        for t in gpu.excluded_types.iter().flatten() {
            // Surrounding whitespace is not part of a type id.
            let t = t.trim().to_string();
            if !excluded.contains(&t) {
                excluded.push(t);
            }
        }
        for t in &excluded {
            r.check(
                pool_of(world, t).is_some_and(|p| pools.iter().any(|q| q == p)),
                "gpu.excludedTypes",
                format!("{t:?} is not a GPU type of the selected pools"),
            );
        }
        e.gpu_pools = pools.clone();
        e.excluded_gpu_types = excluded;
    }
    // GPUs per worker, kept as sent: the document bounds the count only from below (a
    // worker asking for more than a machine has waits on capacity, it is no 400).
    if let Some(count) = gpu.count {
        e.gpu_count = count.max(1) as u64;
    }
    if let Some(v) = &gpu.allowed_cuda_versions {
        e.allowed_cuda_versions = v.clone();
    }
    if let Some(min) = &gpu.min_cuda_version {
        e.min_cuda_version = (!min.is_empty()).then(|| min.clone());
    }
    if gpu
        .allowed_cuda_versions
        .as_ref()
        .is_some_and(|v| !v.is_empty())
        && gpu.min_cuda_version.as_ref().is_some_and(|m| !m.is_empty())
    {
        r.fail(
            "gpu.allowedCudaVersions",
            "a non-empty set and gpu.minCudaVersion are mutually exclusive",
        );
    }
}

/// A CPU selection: every flavor known, vCPU counts powers of two within its range; memory
/// from the flavor's RAM per vCPU.
fn apply_cpu(e: &mut EndpointRecord, cpu: &[super::body::CpuBody], world: &World, r: &mut Rules) {
    let mut selection = Vec::new();
    for (i, c) in cpu.iter().enumerate() {
        let Some(flavor) = world.cloud.cpu_types.iter().find(|f| f.id == c.id) else {
            r.fail(
                &format!("cpu[{i}].id"),
                format!("unknown CPU flavor {:?}", c.id),
            );
            continue;
        };
        let n = c.vcpu_count;
        let ok = n > 0
            && (n as u64).is_power_of_two()
            && n >= i64::from(flavor.vcpu_min)
            && n <= i64::from(flavor.vcpu_max);
        r.check(
            ok,
            &format!("cpu[{i}].vcpuCount"),
            format!(
                "must be a power of two between {} and {} for {}",
                flavor.vcpu_min, flavor.vcpu_max, flavor.id
            ),
        );
        if ok {
            selection.push(CpuSelection {
                id: c.id.clone(),
                vcpu_count: n as u32,
                memory: ((n as f64) * flavor.ram_gb_per_vcpu).ceil().max(1.0) as u32,
            });
        }
    }
    e.cpu = selection;
}

/// Name, workers, scaling, placement, volumes, timeout, flashboot.
fn apply_common(e: &mut EndpointRecord, body: &EndpointBody, world: &World, r: &mut Rules) {
    // The name, worker counts and scaler values are kept as sent: the document bounds
    // them only from below (v1's 191 characters, 1000 workers and 3600 are v1's rules).
    if let Some(name) = &body.name {
        e.name = name.clone();
    }
    if let Some(w) = &body.workers {
        if let Some(min) = w.min {
            e.workers_min = min.max(0) as u64;
        }
        if let Some(max) = w.max {
            e.workers_max = max.max(0) as u64;
        }
        if let Some(t) = w.idle_timeout {
            e.idle_timeout = t.clamp(1, 3600) as u32;
        }
    }
    if let Some(s) = &body.scaling {
        e.scaler_type = s.kind;
        match s.kind {
            ScalerType::QueueDelay => {
                e.queue_delay = Some(s.queue_delay.unwrap_or(1.0));
            }
            ScalerType::RequestCount => {
                e.queue_delay = None;
                e.scaler_value = s.request_count.unwrap_or(1).max(1) as u64;
            }
        }
    }
    if let Some(dcs) = &body.data_center_ids {
        for dc in dcs {
            r.check(
                world.data_centers.iter().any(|d| &d.id == dc),
                "dataCenterIds",
                format!("unknown data center {dc:?}"),
            );
        }
        e.data_center_ids = dcs.clone();
    }
    if let Some(volumes) = &body.network_volumes {
        for v in volumes {
            r.check(
                world.volumes.contains_key(v),
                "networkVolumes",
                format!("unknown network volume {v:?}"),
            );
        }
        r.check(
            !rules::has_duplicates(volumes),
            "networkVolumes",
            "must not repeat a volume",
        );
        e.network_volume_ids = volumes.clone();
    }
    // The document gives `timeout` no bounds (the seed's job API bounds a job's own
    // executionTimeout, not the endpoint's). A negative one, which it gives no meaning,
    // is kept as 0: every job times out at once.
    if let Some(t) = body.timeout {
        e.execution_timeout_ms = t.max(0) as u64;
    }
    if let Some(f) = body.flashboot {
        e.flashboot = f != FlashBoot::Off;
        e.priority_flashboot = f == FlashBoot::PriorityFlashboot;
    }
}

/// Rules on the record as it would be stored.
fn check_record(e: &EndpointRecord, body: &EndpointBody, world: &World, r: &mut Rules) {
    if e.workers_min > e.workers_max {
        r.fail(
            "workers.min",
            format!(
                "must not be greater than workers.max ({} > {})",
                e.workers_min, e.workers_max
            ),
        );
    }
    if e.cpu.is_empty()
        && !e.gpu_pools.is_empty()
        && types_in_pools(world, &e.gpu_pools, &e.excluded_gpu_types).is_empty()
    {
        r.fail(
            "gpu.excludedTypes",
            "leaves no GPU type in the selected pools",
        );
    }
    if !e.allowed_cuda_versions.is_empty()
        && e.min_cuda_version.is_some()
        && !r.mentions("gpu.allowedCudaVersions")
    {
        r.fail(
            "gpu.allowedCudaVersions",
            "the endpoint would carry both a CUDA set and gpu.minCudaVersion; clear one",
        );
    }
    let queue_count =
        e.endpoint_type == EndpointType::Queue && e.scaler_type == ScalerType::RequestCount;
    if queue_count
        && body
            .workers
            .as_ref()
            .is_some_and(|w| w.idle_timeout.is_some())
    {
        r.fail(
            "workers.idleTimeout",
            "does not apply to a queue endpoint scaling on requestCount",
        );
    }
    if e.endpoint_type == EndpointType::LoadBalancer && e.scaler_type == ScalerType::QueueDelay {
        r.fail(
            "scaling.type",
            "QUEUE_DELAY applies to queue endpoints only",
        );
    }
    if !e.data_center_ids.is_empty() {
        for v in &e.network_volume_ids {
            if let Some(vol) = world.volumes.get(v) {
                r.check(
                    e.data_center_ids.contains(&vol.data_center_id),
                    "networkVolumes",
                    format!(
                        "volume {v} is in {}, outside dataCenterIds",
                        vol.data_center_id
                    ),
                );
            }
        }
    }
}

/// v1's fields from the v2 ones.
fn derive_v1(e: &mut EndpointRecord, world: &World) {
    e.gpu_type_ids = if e.cpu.is_empty() {
        types_in_pools(world, &e.gpu_pools, &e.excluded_gpu_types)
    } else {
        Vec::new()
    };
    e.network_volume_id = e.network_volume_ids.first().cloned();
    if e.scaler_type == ScalerType::QueueDelay
        && let Some(d) = e.queue_delay
    {
        // `as` saturates: a delay beyond 64 bits of seconds is u64::MAX.
        e.scaler_value = (d.round() as u64).max(1);
    }
}
