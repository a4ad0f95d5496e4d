//! `/v2/catalog/...`: GPU types, CPU flavors, data centers and public templates, with stock
//! read from the same machines pods are placed on (through the frozen stock view while
//! there is one, exactly like GraphQL's `lowestPrice`).

use axum::Router;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use serde_json::{Value, json};

use super::problem::{Problem, V2Result};
use super::request::{Caller, CommaList, IntParam, V2Query, Violations};
use crate::model::{
    Compliance, CpuTypeFixture, DataCenter, DataCenterRegion, GpuTypeFixture, PublicTemplate,
    TemplateCategory, TemplateSource, VolumeType,
};
use crate::pods::{Cloud, Machine, cuda_at_least, cuda_order};
use crate::state::{App, World};

pub fn routes() -> Router<App> {
    Router::new()
        .route("/v2/catalog/gpus", get(list_gpus))
        .route("/v2/catalog/gpus/{id}", get(get_gpu))
        .route("/v2/catalog/cpus", get(list_cpus))
        .route("/v2/catalog/cpus/{id}", get(get_cpu))
        .route("/v2/catalog/datacenters", get(list_data_centers))
        .route("/v2/catalog/datacenters/{id}", get(get_data_center))
        .route("/v2/catalog/templates", get(list_templates))
}

// ------------------------------------------------------------------ availability

/// The document's coarse stock words for a number of deployable units.
pub fn level(deployable: u32) -> &'static str {
    match deployable {
        0 => "NONE",
        1..=3 => "LOW",
        4..=15 => "MEDIUM",
        _ => "HIGH",
    }
}

fn level_rank(level: &str) -> u8 {
    match level {
        "LOW" => 1,
        "MEDIUM" => 2,
        "HIGH" => 3,
        _ => 0,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CatalogInclude {
    Availability,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Product {
    Pod,
    Cluster,
    Serverless,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CpuProduct {
    Pod,
    Serverless,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CloudFilter {
    #[default]
    Secure,
    Community,
}

/// How a GPU availability read is scoped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuScope {
    pub products: Vec<Product>,
    pub count: u32,
    pub secure: bool,
    /// Data centers allowed by `countryCodes` (all when `None`).
    pub data_centers: Option<Vec<String>>,
    pub cuda: CudaFilter,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CudaFilter {
    Any,
    Exact(Vec<String>),
    AtLeast(String),
}

impl CudaFilter {
    fn accepts(&self, version: &str) -> bool {
        match self {
            Self::Any => true,
            Self::Exact(list) => list.iter().any(|v| v == version),
            Self::AtLeast(min) => cuda_at_least(version, min),
        }
    }
}

/// Machines of `gpu` that the scope looks at.
fn scoped<'a>(machines: &'a [Machine], gpu: &str, scope: &GpuScope) -> Vec<&'a Machine> {
    machines
        .iter()
        .filter(|m| {
            m.gpu_type_id == gpu
                && m.secure == scope.secure
                && scope
                    .data_centers
                    .as_ref()
                    .is_none_or(|dcs| dcs.contains(&m.data_center_id))
                && m.cuda_versions.iter().any(|v| scope.cuda.accepts(v))
        })
        .collect()
}

/// Deployable units of `count` GPUs for one product on these machines.
fn deployable(machines: &[&Machine], product: Product, count: u32, pooled: bool) -> u32 {
    match product {
        Product::Pod => machines
            .iter()
            .filter(|m| m.free >= count)
            .map(|m| m.free / count)
            .sum(),
        Product::Serverless if !pooled => 0,
        Product::Serverless => machines
            .iter()
            .filter(|m| m.free >= count)
            .map(|m| m.free / count)
            .sum(),
        // A cluster node is a whole machine.
        Product::Cluster => machines
            .iter()
            .filter(|m| m.free == m.total && m.total >= count)
            .count() as u32,
    }
}

fn best_level(machines: &[&Machine], scope: &GpuScope, pooled: bool) -> &'static str {
    scope
        .products
        .iter()
        .map(|&p| level(deployable(machines, p, scope.count, pooled)))
        .max_by_key(|l| level_rank(l))
        .unwrap_or("NONE")
}

/// `availability`, `dataCenters` and `cudaVersions` of one GPU type.
pub fn gpu_availability(
    cloud: &Cloud,
    dcs: &[DataCenter],
    gpu: &GpuTypeFixture,
    scope: &GpuScope,
) -> Value {
    let machines = scoped(cloud.stock_machines(), &gpu.id, scope);
    let pooled = gpu.pool.is_some();
    let overall = best_level(&machines, scope, pooled);
    let mut out = json!({ "availability": overall });
    if overall != "NONE" {
        let per_dc: Vec<Value> = dcs
            .iter()
            .filter_map(|dc| {
                let here: Vec<&Machine> = machines
                    .iter()
                    .copied()
                    .filter(|m| m.data_center_id == dc.id && m.total >= scope.count)
                    .collect();
                (!here.is_empty()).then(|| {
                    json!({"id": dc.id, "name": dc.name, "availability": best_level(&here, scope, pooled)})
                })
            })
            .collect();
        if !per_dc.is_empty() {
            out["dataCenters"] = json!(per_dc);
        }
    }
    let mut versions: Vec<String> = machines
        .iter()
        .flat_map(|m| m.cuda_versions.iter())
        .filter(|v| scope.cuda.accepts(v))
        .cloned()
        .collect();
    versions.sort_by(|a, b| cuda_order(a, b));
    versions.dedup();
    if !versions.is_empty() {
        out["cudaVersions"] = versions
            .iter()
            .map(|v| {
                let available = machines
                    .iter()
                    .any(|m| m.cuda_versions.contains(v) && m.free >= scope.count);
                json!({"version": v, "available": available})
            })
            .collect::<Vec<_>>()
            .into();
    }
    out
}

fn manufacturer(m: &str) -> &'static str {
    match m.to_ascii_uppercase().as_str() {
        "NVIDIA" => "NVIDIA",
        "AMD" => "AMD",
        _ => "UNKNOWN",
    }
}

/// The most GPUs of this type one pod may have in a cloud. A property of the catalog, not
/// of today's stock: it is the count a create accepts ([`Cloud::deploy`] takes 1 up to
/// `maxGpuCount`) wherever the type has a price, so it stays put when stock runs out or an
/// admin empties it; 0 where the type is not offered.
pub fn max_count(g: &GpuTypeFixture, secure: bool) -> u32 {
    let price = if secure {
        g.secure_price
    } else {
        g.community_price
    };
    price.map_or(0, |_| g.max_gpu_count)
}

/// The document's `GpuType`, without availability.
pub fn gpu_json(g: &GpuTypeFixture) -> Value {
    let mut price = json!({
        "secure": g.secure_price.unwrap_or(0.0),
        "community": g.community_price.unwrap_or(0.0),
    });
    if let (Some(_), Some(p)) = (&g.pool, g.serverless_price) {
        price["serverless"] = json!(p);
    }
    json!({
        "id": g.id,
        "name": g.display_name,
        "pool": g.pool,
        "manufacturer": manufacturer(&g.manufacturer),
        "memory": g.memory_in_gb,
        "secure": g.secure_price.is_some(),
        "community": g.community_price.is_some(),
        "price": price,
        "maxCount": {"secure": max_count(g, true), "community": max_count(g, false)},
    })
}

// ------------------------------------------------------------------ GPU routes

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct GpuQuery {
    #[serde(default)]
    include: Option<CommaList<CatalogInclude>>,
    #[serde(default)]
    product: Option<CommaList<Product>>,
    #[serde(default)]
    count: Option<IntParam>,
    #[serde(default)]
    cloud: Option<CloudFilter>,
    #[serde(default)]
    country_codes: Option<CommaList<String>>,
    #[serde(default)]
    cuda_versions: Option<CommaList<String>>,
    #[serde(default)]
    min_cuda_version: Option<String>,
}

fn is_country(c: &str) -> bool {
    c.len() == 2 && c.bytes().all(|b| b.is_ascii_uppercase())
}

fn is_major_minor(v: &str) -> bool {
    v.split_once('.').is_some_and(|(a, b)| {
        !a.is_empty()
            && !b.is_empty()
            && a.bytes().all(|c| c.is_ascii_digit())
            && b.bytes().all(|c| c.is_ascii_digit())
    })
}

fn is_major_or_major_minor(v: &str) -> bool {
    (!v.is_empty() && v.bytes().all(|c| c.is_ascii_digit())) || is_major_minor(v)
}

/// Checks the GPU catalog query: patterns and ranges are 422s, combinations 400s. `None`
/// when availability was not asked for.
fn gpu_scope(world: &World, q: &GpuQuery) -> V2Result<Option<GpuScope>> {
    let mut v = Violations::new();
    let include = q
        .include
        .as_ref()
        .map(|l| l.0.as_slice())
        .unwrap_or_default();
    v.check(include.len() <= 1, "include", "must have at most 1 item");
    v.range(q.count.map(|c| c.0), "count", Some(1), None);
    for c in q.country_codes.iter().flat_map(|l| &l.0) {
        v.check(
            is_country(c),
            "countryCodes",
            format!("{c:?} is not an upper-case ISO 3166-1 alpha-2 code"),
        );
    }
    for c in q.cuda_versions.iter().flat_map(|l| &l.0) {
        v.check(
            is_major_minor(c),
            "cudaVersions",
            format!("{c:?} must look like major.minor"),
        );
    }
    if let Some(min) = &q.min_cuda_version {
        v.check(
            is_major_or_major_minor(min),
            "minCudaVersion",
            format!("{min:?} must look like 12 or 12.1"),
        );
    }
    v.finish()?;
    let wants = include.contains(&CatalogInclude::Availability);
    let products = q.product.as_ref().map(|l| l.0.clone()).unwrap_or_default();
    if !wants {
        for (given, name) in [
            (q.product.is_some(), "product"),
            (q.count.is_some(), "count"),
            (q.cloud.is_some(), "cloud"),
            (q.country_codes.is_some(), "countryCodes"),
            (q.cuda_versions.is_some(), "cudaVersions"),
            (q.min_cuda_version.is_some(), "minCudaVersion"),
        ] {
            if given {
                return Err(Problem::bad_request(format!(
                    "{name}: valid only with include=AVAILABILITY"
                )));
            }
        }
        return Ok(None);
    }
    if products.is_empty() {
        return Err(Problem::bad_request(
            "product: required with include=AVAILABILITY (POD, CLUSTER or SERVERLESS)",
        ));
    }
    let cuda = match (&q.cuda_versions, &q.min_cuda_version) {
        (Some(_), Some(_)) => {
            return Err(Problem::bad_request(
                "cudaVersions, minCudaVersion: send one or the other",
            ));
        }
        (Some(list), None) if !list.0.is_empty() => CudaFilter::Exact(list.0.clone()),
        (None, Some(min)) => CudaFilter::AtLeast(min.clone()),
        _ => CudaFilter::Any,
    };
    let data_centers = q
        .country_codes
        .as_ref()
        .filter(|c| !c.0.is_empty())
        .map(|codes| {
            world
                .data_centers
                .iter()
                .filter(|d| d.country_code.as_ref().is_some_and(|c| codes.0.contains(c)))
                .map(|d| d.id.clone())
                .collect()
        });
    Ok(Some(GpuScope {
        products,
        count: q.count.map_or(1, IntParam::as_u32).max(1),
        secure: q.cloud.unwrap_or_default() == CloudFilter::Secure,
        data_centers,
        cuda,
    }))
}

fn gpu_with_availability(world: &World, g: &GpuTypeFixture, scope: Option<&GpuScope>) -> Value {
    let mut out = gpu_json(g);
    if let Some(scope) = scope {
        let extra = gpu_availability(&world.cloud, &world.data_centers, g, scope);
        for (k, v) in extra.as_object().into_iter().flatten() {
            out[k] = v.clone();
        }
    }
    out
}

/// Whether a GPU type has any machine in the country-filtered data centers.
fn offered_in(cloud: &Cloud, g: &GpuTypeFixture, scope: &GpuScope) -> bool {
    scope.data_centers.as_ref().is_none_or(|dcs| {
        cloud
            .stock_machines()
            .iter()
            .any(|m| m.gpu_type_id == g.id && dcs.contains(&m.data_center_id))
    })
}

async fn list_gpus(
    State(app): State<App>,
    _caller: Caller,
    V2Query(q): V2Query<GpuQuery>,
) -> V2Result<Response> {
    let world = app.world.lock();
    let scope = gpu_scope(&world, &q)?;
    let gpus: Vec<Value> = world
        .cloud
        .gpu_types
        .iter()
        .filter(|g| {
            scope
                .as_ref()
                .is_none_or(|s| offered_in(&world.cloud, g, s))
        })
        .map(|g| gpu_with_availability(&world, g, scope.as_ref()))
        .collect();
    Ok(axum::Json(json!({ "gpus": gpus })).into_response())
}

async fn get_gpu(
    State(app): State<App>,
    _caller: Caller,
    Path(id): Path<String>,
    V2Query(q): V2Query<GpuQuery>,
) -> V2Result<Response> {
    let world = app.world.lock();
    let scope = gpu_scope(&world, &q)?;
    let g = world
        .cloud
        .gpu_type(&id)
        .ok_or_else(|| Problem::not_found(format!("GPU type {id} not found")))?;
    let mut out = gpu_with_availability(&world, g, scope.as_ref());
    if let Some(s) = &scope
        && !offered_in(&world.cloud, g, s)
    {
        out["availability"] = json!("NONE");
        if let Some(o) = out.as_object_mut() {
            o.remove("dataCenters");
        }
    }
    Ok(axum::Json(out).into_response())
}

// ------------------------------------------------------------------ CPU routes

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct CpuQuery {
    #[serde(default)]
    include: Option<CommaList<CatalogInclude>>,
    #[serde(default)]
    product: Option<CommaList<CpuProduct>>,
    #[serde(default)]
    vcpu_count: Option<IntParam>,
}

/// vCPUs a CPU availability read asks for; `None` when availability was not asked for.
fn cpu_scope(q: &CpuQuery) -> V2Result<Option<(Vec<CpuProduct>, Option<u32>)>> {
    let mut v = Violations::new();
    let include = q
        .include
        .as_ref()
        .map(|l| l.0.as_slice())
        .unwrap_or_default();
    v.check(include.len() <= 1, "include", "must have at most 1 item");
    v.range(q.vcpu_count.map(|n| n.0), "vcpuCount", Some(2), None);
    v.finish()?;
    if !include.contains(&CatalogInclude::Availability) {
        if q.product.is_some() {
            return Err(Problem::bad_request(
                "product: valid only with include=AVAILABILITY",
            ));
        }
        if q.vcpu_count.is_some() {
            return Err(Problem::bad_request(
                "vcpuCount: valid only with include=AVAILABILITY",
            ));
        }
        return Ok(None);
    }
    let products = q.product.as_ref().map(|l| l.0.clone()).unwrap_or_default();
    if products.is_empty() {
        return Err(Problem::bad_request(
            "product: required with include=AVAILABILITY (POD or SERVERLESS)",
        ));
    }
    // A rule the schema only states in words: a 400, not a 422.
    if let Some(n) = q.vcpu_count
        && !(n.0 as u64).is_power_of_two()
    {
        return Err(Problem::bad_request(format!(
            "vcpuCount: must be a power of two (got {n})"
        )));
    }
    Ok(Some((products, q.vcpu_count.map(IntParam::as_u32))))
}

fn cpu_level(machines: &[&Machine], vcpus: u32) -> &'static str {
    let vcpus = vcpus.max(1);
    level(
        machines
            .iter()
            .filter(|m| m.free >= vcpus)
            .map(|m| m.free / vcpus)
            .sum(),
    )
}

/// The document's `CpuType`, with availability when `scope` is given.
pub fn cpu_json(
    world: &World,
    c: &CpuTypeFixture,
    scope: Option<&(Vec<CpuProduct>, Option<u32>)>,
) -> Value {
    let mut out = json!({
        "id": c.id,
        "name": c.name,
        "group": c.group,
        "vcpu": {"min": c.vcpu_min, "max": c.vcpu_max},
        "ramGbPerVcpu": c.ram_gb_per_vcpu,
        "price": {"securePerVcpu": c.secure_price_per_vcpu, "serverlessPerVcpu": c.serverless_price_per_vcpu},
    });
    if let Some((_, vcpus)) = scope {
        let vcpus = vcpus.unwrap_or(c.vcpu_min);
        let fits = vcpus >= c.vcpu_min && vcpus <= c.vcpu_max;
        let machines: Vec<&Machine> = world
            .cloud
            .stock_machines()
            .iter()
            .filter(|m| fits && m.cpu_flavor.as_deref() == Some(c.id.as_str()))
            .collect();
        // POD and SERVERLESS draw on the same machines in the emulator.
        let overall = cpu_level(&machines, vcpus);
        out["availability"] = json!(overall);
        if overall != "NONE" {
            let per_dc: Vec<Value> = world
                .data_centers
                .iter()
                .filter_map(|dc| {
                    let here: Vec<&Machine> = machines.iter().copied().filter(|m| m.data_center_id == dc.id).collect();
                    (!here.is_empty()).then(|| json!({"id": dc.id, "name": dc.name, "availability": cpu_level(&here, vcpus)}))
                })
                .collect();
            out["dataCenters"] = json!(per_dc);
        }
    }
    out
}

async fn list_cpus(
    State(app): State<App>,
    _caller: Caller,
    V2Query(q): V2Query<CpuQuery>,
) -> V2Result<Response> {
    let scope = cpu_scope(&q)?;
    let world = app.world.lock();
    let cpus: Vec<Value> = world
        .cloud
        .cpu_types
        .iter()
        .map(|c| cpu_json(&world, c, scope.as_ref()))
        .collect();
    Ok(axum::Json(json!({ "cpus": cpus })).into_response())
}

async fn get_cpu(
    State(app): State<App>,
    _caller: Caller,
    Path(id): Path<String>,
    V2Query(q): V2Query<CpuQuery>,
) -> V2Result<Response> {
    let scope = cpu_scope(&q)?;
    let world = app.world.lock();
    let c = world
        .cloud
        .cpu_type(&id)
        .ok_or_else(|| Problem::not_found(format!("CPU type {id} not found")))?;
    Ok(axum::Json(cpu_json(&world, c, scope.as_ref())).into_response())
}

// ------------------------------------------------------------------ data centers

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DataCenterInclude {
    GpuAvailability,
    CpuAvailability,
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct DataCenterQuery {
    #[serde(default)]
    include: Option<CommaList<DataCenterInclude>>,
    #[serde(default)]
    regions: Option<CommaList<DataCenterRegion>>,
    #[serde(default)]
    network_volume_types: Option<CommaList<VolumeType>>,
    #[serde(default)]
    compliance: Option<CommaList<Compliance>>,
    #[serde(default)]
    global_network: Option<bool>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct DataCenterGetQuery {
    #[serde(default)]
    include: Option<CommaList<DataCenterInclude>>,
}

/// The document's `DataCenter`, with the availability arrays asked for.
pub fn data_center_json(world: &World, dc: &DataCenter, include: &[DataCenterInclude]) -> Value {
    let mut out = json!({
        "id": dc.id,
        "name": dc.name,
        "region": dc.region(),
        "globalNetwork": dc.global_network,
        "networkVolumeTypes": dc.network_volume_types,
        "compliance": dc.compliance,
    });
    let machines: Vec<&Machine> = world
        .cloud
        .stock_machines()
        .iter()
        .filter(|m| m.data_center_id == dc.id)
        .collect();
    if include.contains(&DataCenterInclude::GpuAvailability) {
        let gpus: Vec<Value> = world
            .cloud
            .gpu_types
            .iter()
            .filter_map(|g| {
                let of_type: Vec<&Machine> = machines
                    .iter()
                    .copied()
                    .filter(|m| m.gpu_type_id == g.id)
                    .collect();
                (!of_type.is_empty()).then(|| {
                    let free: u32 = of_type.iter().map(|m| m.free).sum();
                    json!({"id": g.id, "name": g.display_name, "availability": level(free)})
                })
            })
            .collect();
        if !gpus.is_empty() {
            out["gpuAvailability"] = json!(gpus);
        }
    }
    if include.contains(&DataCenterInclude::CpuAvailability) {
        let cpus: Vec<Value> = world
            .cloud
            .cpu_types
            .iter()
            .filter_map(|c| {
                let of_flavor: Vec<&Machine> = machines
                    .iter()
                    .copied()
                    .filter(|m| m.cpu_flavor.as_deref() == Some(c.id.as_str()))
                    .collect();
                (!of_flavor.is_empty()).then(|| {
                    json!({"id": c.id, "name": c.name, "availability": cpu_level(&of_flavor, c.vcpu_min)})
                })
            })
            .collect();
        if !cpus.is_empty() {
            out["cpuAvailability"] = json!(cpus);
        }
    }
    out
}

async fn list_data_centers(
    State(app): State<App>,
    _caller: Caller,
    V2Query(q): V2Query<DataCenterQuery>,
) -> Response {
    let world = app.world.lock();
    let include = q.include.map(|l| l.0).unwrap_or_default();
    let regions = q.regions.map(|l| l.0).unwrap_or_default();
    let volume_types = q.network_volume_types.map(|l| l.0).unwrap_or_default();
    let compliance = q.compliance.map(|l| l.0).unwrap_or_default();
    let dcs: Vec<Value> = world
        .data_centers
        .iter()
        .filter(|d| regions.is_empty() || regions.contains(&d.region()))
        .filter(|d| {
            volume_types
                .iter()
                .all(|t| d.network_volume_types.contains(t))
        })
        .filter(|d| compliance.iter().all(|c| d.compliance.contains(c)))
        .filter(|d| q.global_network.is_none_or(|g| d.global_network == g))
        .map(|d| data_center_json(&world, d, &include))
        .collect();
    axum::Json(json!({ "dataCenters": dcs })).into_response()
}

async fn get_data_center(
    State(app): State<App>,
    _caller: Caller,
    Path(id): Path<String>,
    V2Query(q): V2Query<DataCenterGetQuery>,
) -> V2Result<Response> {
    let world = app.world.lock();
    let dc = world
        .data_centers
        .iter()
        .find(|d| d.id == id)
        .ok_or_else(|| Problem::not_found(format!("data center {id} not found")))?;
    let include = q.include.map(|l| l.0).unwrap_or_default();
    Ok(axum::Json(data_center_json(&world, dc, &include)).into_response())
}

// ------------------------------------------------------------------ public templates

/// A template of the public catalog by id.
pub fn public_template<'a>(world: &'a World, id: &str) -> Option<&'a PublicTemplate> {
    world.public_templates.iter().find(|t| t.id == id)
}

/// The document's `Template` for a public catalog template (`registry` is always null for
/// templates the caller does not own).
pub fn public_template_json(t: &PublicTemplate) -> Value {
    let mounts = if t.volume_in_gb > 0 {
        json!({"persistent": {"size": t.volume_in_gb, "path": t.volume_mount_path}})
    } else {
        json!({})
    };
    json!({
        "id": t.id,
        "name": t.name,
        "image": t.image_name,
        "args": t.docker_args,
        "disk": t.container_disk_in_gb.max(1),
        "mounts": mounts,
        "ports": t.ports,
        "env": t.env,
        "registry": Value::Null,
        "serverless": t.is_serverless,
        "public": true,
        "category": match t.category {
            TemplateCategory::Cpu => "CPU",
            TemplateCategory::Nvidia => "NVIDIA",
            TemplateCategory::Amd => "AMD",
        },
        "startSsh": t.start_ssh,
        "startJupyter": t.start_jupyter,
        "allowedCudaVersions": t.allowed_cuda_versions,
    })
}

/// At most this many templates per answer (the document's limit; no pagination).
const MAX_TEMPLATES: usize = 100;

#[derive(Debug, Deserialize, Default)]
struct TemplatesQuery {
    #[serde(default)]
    source: Option<TemplateSource>,
}

async fn list_templates(
    State(app): State<App>,
    _caller: Caller,
    V2Query(q): V2Query<TemplatesQuery>,
) -> Response {
    let source = q.source.unwrap_or_default();
    let world = app.world.lock();
    let templates: Vec<Value> = world
        .public_templates
        .iter()
        .filter(|t| t.source == source)
        .take(MAX_TEMPLATES)
        .map(public_template_json)
        .collect();
    axum::Json(json!({ "templates": templates })).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::Fixtures;
    use crate::pods::{DeployRequest, PodError, cuda_parts};

    fn world() -> World {
        World::from_fixtures(&Fixtures::built_in()).unwrap()
    }

    fn scope(products: &[Product], count: u32, secure: bool) -> GpuScope {
        GpuScope {
            products: products.to_vec(),
            count,
            secure,
            data_centers: None,
            cuda: CudaFilter::Any,
        }
    }

    const H100: &str = "NVIDIA H100 80GB HBM3";

    #[test]
    fn levels() {
        assert_eq!(level(0), "NONE");
        assert_eq!(level(3), "LOW");
        assert_eq!(level(15), "MEDIUM");
        assert_eq!(level(16), "HIGH");
    }

    #[test]
    fn availability_per_cloud_count_and_data_center() {
        let w = world();
        let h100 = w.cloud.gpu_type(H100).unwrap().clone();
        // One secure machine of 8 in US-GA-1.
        let a = gpu_availability(
            &w.cloud,
            &w.data_centers,
            &h100,
            &scope(&[Product::Pod], 1, true),
        );
        assert_eq!(a["availability"], "MEDIUM");
        assert_eq!(a["dataCenters"][0]["id"], "US-GA-1");
        let eight = gpu_availability(
            &w.cloud,
            &w.data_centers,
            &h100,
            &scope(&[Product::Pod], 8, true),
        );
        assert_eq!(eight["availability"], "LOW");
        let community = gpu_availability(
            &w.cloud,
            &w.data_centers,
            &h100,
            &scope(&[Product::Pod], 1, false),
        );
        assert_eq!(community["availability"], "NONE");
        assert!(community.get("dataCenters").is_none());
        assert!(community.get("cudaVersions").is_none());
        assert_eq!(
            a["cudaVersions"][0],
            json!({"version": "12.4", "available": true})
        );
    }

    #[test]
    fn cuda_filters_and_frozen_view() {
        let mut w = world();
        let l40s = w.cloud.gpu_type("NVIDIA L40S").unwrap().clone();
        let mut s = scope(&[Product::Pod], 1, true);
        s.cuda = CudaFilter::Exact(vec!["12.4".into()]);
        assert_eq!(
            gpu_availability(&w.cloud, &w.data_centers, &l40s, &s)["availability"],
            "NONE"
        );
        s.cuda = CudaFilter::AtLeast("12".into());
        let a = gpu_availability(&w.cloud, &w.data_centers, &l40s, &s);
        assert_eq!(a["availability"], "MEDIUM");
        assert_eq!(a["cudaVersions"].as_array().unwrap().len(), 2);
        s.cuda = CudaFilter::AtLeast("12.9".into());
        assert_eq!(
            gpu_availability(&w.cloud, &w.data_centers, &l40s, &s)["cudaVersions"],
            json!([{"version": "12.9", "available": true}])
        );

        let h100 = w.cloud.gpu_type(H100).unwrap().clone();
        w.cloud.freeze_stock_view();
        w.cloud.set_stock(H100, None, None, 0).unwrap();
        let shown = gpu_availability(
            &w.cloud,
            &w.data_centers,
            &h100,
            &scope(&[Product::Pod], 1, true),
        );
        assert_ne!(shown["availability"], "NONE");
        w.cloud.thaw_stock_view();
        let live = gpu_availability(
            &w.cloud,
            &w.data_centers,
            &h100,
            &scope(&[Product::Pod], 1, true),
        );
        assert_eq!(live["availability"], "NONE");
    }

    #[test]
    fn max_count_is_the_catalogs_ceiling_not_todays_stock() {
        let mut w = world();
        assert_eq!(
            gpu_json(w.cloud.gpu_type(H100).unwrap())["maxCount"],
            json!({"secure": 8, "community": 8})
        );
        // The A100's only community machine holds 4; a pod may still ask for 8.
        let a100 = w.cloud.gpu_type("NVIDIA A100 80GB PCIe").unwrap();
        assert_eq!(max_count(a100, false), 8);

        w.cloud.freeze_stock_view();
        w.cloud.set_stock(H100, None, None, 0).unwrap();
        let h100 = w.cloud.gpu_type(H100).unwrap().clone();
        let shown = gpu_availability(
            &w.cloud,
            &w.data_centers,
            &h100,
            &scope(&[Product::Pod], 1, true),
        );
        assert_ne!(shown["availability"], "NONE");
        assert_eq!(
            gpu_json(&h100)["maxCount"],
            json!({"secure": 8, "community": 8})
        );

        let mut secure_only = h100;
        secure_only.community_price = None;
        assert_eq!(
            gpu_json(&secure_only)["maxCount"],
            json!({"secure": 8, "community": 0})
        );
    }

    #[test]
    fn max_count_matches_the_count_a_deploy_accepts() {
        let mut w = world();
        let h100 = w.cloud.gpu_type(H100).unwrap().clone();
        let ceiling = max_count(&h100, true);
        let req = |count: u32| DeployRequest {
            name: Some("p".into()),
            image_name: Some("i".into()),
            gpu_type_id: Some(H100.into()),
            gpu_count: Some(count as i32),
            ..DeployRequest::default()
        };
        assert!(matches!(
            w.cloud.deploy(req(ceiling + 1), 0),
            Err(PodError::Invalid {
                field: "gpuCount",
                ..
            })
        ));
        assert_eq!(w.cloud.deploy(req(ceiling), 0).unwrap().gpu_count, ceiling);
    }

    #[test]
    fn clusters_need_whole_machines_and_serverless_a_pool() {
        let mut w = world();
        let h100 = w.cloud.gpu_type(H100).unwrap().clone();
        let req = DeployRequest {
            name: Some("p".into()),
            image_name: Some("i".into()),
            gpu_type_id: Some(H100.into()),
            gpu_count: Some(1),
            ..DeployRequest::default()
        };
        w.cloud.deploy(req, 0).unwrap();
        let cluster = gpu_availability(
            &w.cloud,
            &w.data_centers,
            &h100,
            &scope(&[Product::Cluster], 1, true),
        );
        assert_eq!(cluster["availability"], "NONE");
        let both = gpu_availability(
            &w.cloud,
            &w.data_centers,
            &h100,
            &scope(&[Product::Cluster, Product::Pod], 1, true),
        );
        assert_eq!(both["availability"], "MEDIUM");
        let mut unpooled = h100.clone();
        unpooled.pool = None;
        let sls = gpu_availability(
            &w.cloud,
            &w.data_centers,
            &unpooled,
            &scope(&[Product::Serverless], 1, true),
        );
        assert_eq!(sls["availability"], "NONE");
    }

    #[test]
    fn query_rules() {
        let w = world();
        let q = |s: &str| -> V2Result<Option<GpuScope>> {
            let q: GpuQuery = super::super::parse_query(Some(s))?;
            gpu_scope(&w, &q)
        };
        assert!(q("").unwrap().is_none());
        assert_eq!(q("product=POD").unwrap_err().status.as_u16(), 400);
        assert_eq!(q("include=AVAILABILITY").unwrap_err().status.as_u16(), 400);
        assert_eq!(q("count=2").unwrap_err().status.as_u16(), 400);
        assert_eq!(
            q("include=AVAILABILITY&product=POD&cudaVersions=12.8&minCudaVersion=12")
                .unwrap_err()
                .status
                .as_u16(),
            400
        );
        assert_eq!(
            q("include=AVAILABILITY&product=POD&count=0")
                .unwrap_err()
                .status
                .as_u16(),
            422
        );
        assert_eq!(
            q("include=AVAILABILITY&product=POD&countryCodes=fr")
                .unwrap_err()
                .status
                .as_u16(),
            422
        );
        assert_eq!(
            q("include=AVAILABILITY&product=POD&cudaVersions=12")
                .unwrap_err()
                .status
                .as_u16(),
            422
        );
        assert_eq!(
            q("include=AVAILABILITY&product=MOON")
                .unwrap_err()
                .status
                .as_u16(),
            422
        );
        let s = q("include=AVAILABILITY&product=POD,SERVERLESS&count=2&cloud=COMMUNITY&countryCodes=RO&minCudaVersion=12")
            .unwrap()
            .unwrap();
        assert_eq!(s.count, 2);
        assert!(!s.secure);
        assert_eq!(s.data_centers, Some(vec!["EU-RO-1".to_string()]));
        assert_eq!(s.cuda, CudaFilter::AtLeast("12".into()));
    }

    #[test]
    fn data_centers_show_what_they_host() {
        let w = world();
        let ro = w.data_centers.iter().find(|d| d.id == "EU-RO-1").unwrap();
        let plain = data_center_json(&w, ro, &[]);
        assert_eq!(plain["region"], "EUROPE");
        assert!(plain.get("gpuAvailability").is_none());
        let full = data_center_json(
            &w,
            ro,
            &[
                DataCenterInclude::GpuAvailability,
                DataCenterInclude::CpuAvailability,
            ],
        );
        let gpus = full["gpuAvailability"].as_array().unwrap();
        assert!(gpus.iter().any(|g| g["id"] == "NVIDIA GeForce RTX 4090"));
        assert!(!gpus.iter().any(|g| g["id"] == H100));
        assert_eq!(full["cpuAvailability"][0]["id"], "cpu3c");
    }

    #[test]
    fn cuda_parts_compare_numerically() {
        assert!(cuda_parts("12.11") > cuda_parts("12.2"));
        assert!(cuda_at_least("12.8", "12"));
        assert!(!cuda_at_least("11.8", "12"));
    }
}
