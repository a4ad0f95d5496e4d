//! The bodies REST v2 takes for pods (create, update, action) and the checks that refuse
//! them, naming the field, before anything changes.

use super::*;

// Nested objects of the bodies: only a JSON object reads as one.
crate::v2::object::objects_only!(PersistentMount, NetworkMount, Mounts, CreateGpu, CreateCpu);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CloudTier {
    #[default]
    Secure,
    Community,
}

#[derive(Debug, Deserialize)]
#[serde(remote = "Self", rename_all = "camelCase", deny_unknown_fields)]
pub struct PersistentMount {
    pub size: Int,
    pub path: String,
}

#[derive(Debug, Deserialize)]
#[serde(remote = "Self", rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkMount {
    pub volume_id: String,
    pub path: String,
}

#[derive(Debug, Deserialize, Default)]
#[serde(remote = "Self", rename_all = "camelCase", deny_unknown_fields)]
pub struct Mounts {
    #[serde(default, deserialize_with = "not_null")]
    pub persistent: Option<PersistentMount>,
    #[serde(default, deserialize_with = "not_null")]
    pub network: Option<Vec<NetworkMount>>,
}

#[derive(Debug, Deserialize)]
#[serde(remote = "Self", rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateGpu {
    pub id: String,
    #[serde(default, deserialize_with = "not_null")]
    pub count: Option<Int>,
    #[serde(default, deserialize_with = "not_null")]
    pub allowed_cuda_versions: Option<Vec<String>>,
    #[serde(default, deserialize_with = "not_null")]
    pub min_cuda_version: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(remote = "Self", rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateCpu {
    pub id: String,
    pub vcpu_count: Int,
}

/// The container settings shared by create and update.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreatePodBody {
    pub name: String,
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
    #[serde(default, deserialize_with = "nullable")]
    pub registry: Option<Option<String>>,
    #[serde(default, deserialize_with = "not_null")]
    pub cloud: Option<CloudTier>,
    #[serde(default, deserialize_with = "not_null")]
    pub cpu: Option<CreateCpu>,
    #[serde(default, deserialize_with = "not_null")]
    pub gpu: Option<CreateGpu>,
    #[serde(default, deserialize_with = "not_null")]
    pub data_center_ids: Option<Vec<String>>,
    #[serde(default, deserialize_with = "not_null")]
    pub global_networking: Option<bool>,
    #[serde(default, deserialize_with = "not_null")]
    pub mounts: Option<Mounts>,
    #[serde(default, deserialize_with = "not_null")]
    pub start_jupyter: Option<bool>,
    #[serde(default, deserialize_with = "not_null")]
    pub start_ssh: Option<bool>,
    #[serde(default, deserialize_with = "not_null")]
    pub template_id: Option<String>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdatePodBody {
    #[serde(default, deserialize_with = "not_null")]
    pub name: Option<String>,
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
    #[serde(default, deserialize_with = "nullable")]
    pub registry: Option<Option<String>>,
    #[serde(default, deserialize_with = "not_null")]
    pub global_networking: Option<bool>,
    #[serde(default, deserialize_with = "not_null")]
    pub locked: Option<bool>,
    #[serde(default, deserialize_with = "not_null")]
    pub mounts: Option<Mounts>,
    #[serde(default, deserialize_with = "not_null")]
    pub template_id: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PodAction {
    Start,
    Stop,
    Restart,
    Terminate,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ActionBody {
    pub(super) action: PodAction,
}

// ------------------------------------------------------------------ checks

pub(super) fn cuda_version_ok(v: &str) -> bool {
    v.split_once('.').is_some_and(|(a, b)| {
        !a.is_empty()
            && !b.is_empty()
            && a.bytes().all(|c| c.is_ascii_digit())
            && b.bytes().all(|c| c.is_ascii_digit())
    })
}

pub(crate) fn check_mounts(v: &mut Violations, m: &Mounts) {
    if let Some(p) = &m.persistent {
        v.range(Some(p.size.0), "mounts.persistent.size", Some(10), None);
    }
    if let Some(n) = &m.network {
        v.check(n.len() <= 1, "mounts.network", "must have at most 1 item");
    }
}

/// Schema rules serde cannot express: lengths, minimums, patterns, the image/template rule.
pub(super) fn check_create(b: &CreatePodBody) -> V2Result<()> {
    let mut v = Violations::new();
    v.check(!b.name.is_empty(), "name", "must not be empty");
    v.range(b.disk.map(|d| d.0), "disk", Some(1), None);
    if let Some(t) = &b.template_id {
        v.check(!t.is_empty(), "templateId", "must not be empty");
    }
    if b.template_id.is_none() {
        v.check(
            b.image.is_some(),
            "image",
            "required unless templateId is set",
        );
    }
    if let Some(g) = &b.gpu {
        v.range(g.count.map(|c| c.0), "gpu.count", Some(1), None);
        for (i, c) in g.allowed_cuda_versions.iter().flatten().enumerate() {
            v.check(
                cuda_version_ok(c),
                &format!("gpu.allowedCudaVersions[{i}]"),
                format!("must look like major.minor (got {c:?})"),
            );
        }
        if let Some(min) = &g.min_cuda_version {
            v.check(
                cuda_version_ok(min),
                "gpu.minCudaVersion",
                format!("must look like major.minor (got {min:?})"),
            );
        }
    }
    if let Some(c) = &b.cpu {
        v.check(!c.id.is_empty(), "cpu.id", "must not be empty");
        v.range(Some(c.vcpu_count.0), "cpu.vcpuCount", Some(2), None);
    }
    if let Some(m) = &b.mounts {
        check_mounts(&mut v, m);
    }
    v.finish()
}

pub(super) fn check_update(b: &UpdatePodBody) -> V2Result<()> {
    let mut v = Violations::new();
    if let Some(n) = &b.name {
        v.check(!n.is_empty(), "name", "must not be empty");
    }
    v.range(b.disk.map(|d| d.0), "disk", Some(1), None);
    if let Some(m) = &b.mounts {
        check_mounts(&mut v, m);
    }
    v.finish()
}

/// A capacity or rule failure of the cloud, as the v2 answer (always a 400: the body
/// matched the document).
pub(crate) fn placement_problem(err: PodError) -> Problem {
    match err {
        PodError::NotFound(id) => Problem::not_found(format!("pod {id} not found")),
        PodError::Invalid { field, rule } => {
            let field = match field {
                "gpuTypeId" => "gpu.id",
                "gpuCount" => "gpu.count",
                "dataCenterId" => "dataCenterIds",
                "imageName" => "image",
                other => other,
            };
            Problem::bad_request(format!("{field}: {rule}"))
        }
        other => Problem::bad_request(other.to_string()),
    }
}

/// 409 for a cluster member: only its cluster (`/v2/clusters/{id}`) changes it. `what` says
/// what the pod endpoint would have done ("modified", "terminated", ...).
pub(super) fn refuse_member(pod: &Pod, what: &str) -> V2Result<()> {
    match &pod.cluster {
        None => Ok(()),
        Some(m) => Err(Problem::conflict(format!(
            "pod {} belongs to cluster {} and cannot be {what} via the pod endpoints; manage it through /v2/clusters/{}",
            pod.id, m.cluster_id, m.cluster_id
        ))),
    }
}

pub(super) fn pod_not_found(id: &str) -> Problem {
    Problem::not_found(format!("pod {id} not found"))
}
