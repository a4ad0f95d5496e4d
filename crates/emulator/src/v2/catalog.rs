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
        // A cluster node is a machine of its own with `count` GPUs free, as a cluster
        // create places them (`Cloud::deploy_cluster`).
        Product::Cluster => machines.iter().filter(|m| m.free >= count).count() as u32,
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

/// The `include` list of a GPU or CPU catalog query; more than one item is a violation.
fn checked_include<'q>(
    include: &'q Option<CommaList<CatalogInclude>>,
    v: &mut Violations,
) -> &'q [CatalogInclude] {
    let include = include.as_ref().map(|l| l.0.as_slice()).unwrap_or_default();
    v.check(include.len() <= 1, "include", "must have at most 1 item");
    include
}

/// Checks the GPU catalog query: patterns and ranges are 422s, combinations 400s. `None`
/// when availability was not asked for.
fn gpu_scope(world: &World, q: &GpuQuery) -> V2Result<Option<GpuScope>> {
    let mut v = Violations::new();
    let include = checked_include(&q.include, &mut v);
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
    let include = checked_include(&q.include, &mut v);
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
mod tests;
