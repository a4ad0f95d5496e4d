//! Request bodies of `POST /v2/serverless` (`CreateEndpointRequest`) and
//! `PATCH /v2/serverless/{id}` (`UpdateEndpointRequest`), and the document's schema beyond
//! types: a mismatch is a 422 naming the field.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::super::container::{ContainerPatch, container_patch_of};
use super::super::integer::{integer, opt_integer};
use super::super::problem::V2Result;
use super::super::request::{Violations, not_null, nullable};
use super::super::rules;
use crate::model::{EndpointType, ScalerType};

// Nested objects of the bodies: only a JSON object reads as one.
crate::v2::object::objects_only!(ScalingBody, GpuBody, CpuBody, WorkersBody);

/// FlashBoot mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum FlashBoot {
    Off,
    Flashboot,
    PriorityFlashboot,
}

/// `EndpointScaling`, read flat and checked against its two variants.
#[derive(Debug, Clone, Deserialize)]
#[serde(remote = "Self", rename_all = "camelCase", deny_unknown_fields)]
pub struct ScalingBody {
    #[serde(rename = "type")]
    pub kind: ScalerType,
    #[serde(default, deserialize_with = "not_null")]
    pub queue_delay: Option<f64>,
    #[serde(default, deserialize_with = "opt_integer")]
    pub request_count: Option<i64>,
}

impl ScalingBody {
    fn schema(&self, v: &mut Violations) {
        match self.kind {
            ScalerType::QueueDelay => {
                v.check(self.queue_delay.is_some(), "scaling.queueDelay", "required");
                v.check(
                    self.request_count.is_none(),
                    "scaling.requestCount",
                    "unexpected property, not allowed with QUEUE_DELAY",
                );
                v.range(self.queue_delay, "scaling.queueDelay", Some(0.5), None);
            }
            ScalerType::RequestCount => {
                v.check(
                    self.request_count.is_some(),
                    "scaling.requestCount",
                    "required",
                );
                v.check(
                    self.queue_delay.is_none(),
                    "scaling.queueDelay",
                    "unexpected property, not allowed with REQUEST_COUNT",
                );
                v.range(self.request_count, "scaling.requestCount", Some(1), None);
            }
        }
    }
}

/// `CreateEndpointGpuConfig` / `UpdateEndpointGpuConfig`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(remote = "Self", rename_all = "camelCase", deny_unknown_fields)]
pub struct GpuBody {
    #[serde(default, deserialize_with = "not_null")]
    pub pools: Option<Vec<String>>,
    #[serde(default, deserialize_with = "not_null")]
    pub excluded_types: Option<Vec<String>>,
    #[serde(default, deserialize_with = "opt_integer")]
    pub count: Option<i64>,
    #[serde(default, deserialize_with = "not_null")]
    pub allowed_cuda_versions: Option<Vec<String>>,
    #[serde(default, deserialize_with = "not_null")]
    pub min_cuda_version: Option<String>,
}

impl GpuBody {
    fn schema(&self, v: &mut Violations, creating: bool) {
        match &self.pools {
            None if creating => v.fail("gpu.pools", "required"),
            None => v.check(
                self.excluded_types.is_none(),
                "gpu.excludedTypes",
                "requires gpu.pools (the two are one selection)",
            ),
            Some(pools) => v.check(
                !pools.is_empty(),
                "gpu.pools",
                "must name at least one pool",
            ),
        }
        if let Some(excluded) = &self.excluded_types {
            v.check(
                !rules::has_duplicates(excluded),
                "gpu.excludedTypes",
                "must not repeat a type",
            );
            for (i, t) in excluded.iter().enumerate() {
                v.check(
                    rules::is_type_id(t),
                    &format!("gpu.excludedTypes[{i}]"),
                    "must be a GPU type id",
                );
            }
        }
        v.range(self.count, "gpu.count", Some(1), None);
        for (i, c) in self.allowed_cuda_versions.iter().flatten().enumerate() {
            v.check(
                rules::is_major_minor(c),
                &format!("gpu.allowedCudaVersions[{i}]"),
                "must be major.minor, e.g. 12.8",
            );
        }
        if let Some(min) = &self.min_cuda_version {
            // On update an empty string clears the floor.
            v.check(
                rules::is_major_minor(min) || (!creating && min.is_empty()),
                "gpu.minCudaVersion",
                "must be major.minor, e.g. 12.8",
            );
        }
    }
}

/// `CreateCpuConfig`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(remote = "Self", rename_all = "camelCase", deny_unknown_fields)]
pub struct CpuBody {
    pub id: String,
    #[serde(deserialize_with = "integer")]
    pub vcpu_count: i64,
}

/// `EndpointWorkers`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(remote = "Self", rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkersBody {
    #[serde(default, deserialize_with = "opt_integer")]
    pub min: Option<i64>,
    #[serde(default, deserialize_with = "opt_integer")]
    pub max: Option<i64>,
    #[serde(default, deserialize_with = "opt_integer")]
    pub idle_timeout: Option<i64>,
}

/// The fields of both bodies; `type` is create-only.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EndpointBody {
    #[serde(default, deserialize_with = "not_null")]
    pub name: Option<String>,
    #[serde(default, rename = "type", deserialize_with = "not_null")]
    pub endpoint_type: Option<EndpointType>,
    #[serde(default, deserialize_with = "not_null")]
    pub scaling: Option<ScalingBody>,
    #[serde(default, deserialize_with = "not_null")]
    pub template_id: Option<String>,
    #[serde(default, deserialize_with = "not_null")]
    pub image: Option<String>,
    #[serde(default, deserialize_with = "not_null")]
    pub args: Option<String>,
    #[serde(default, deserialize_with = "opt_integer")]
    pub disk: Option<i64>,
    #[serde(default, deserialize_with = "not_null")]
    pub env: Option<BTreeMap<String, String>>,
    #[serde(default, deserialize_with = "not_null")]
    pub ports: Option<Vec<String>>,
    #[serde(default, deserialize_with = "nullable")]
    pub registry: Option<Option<String>>,
    #[serde(default, deserialize_with = "not_null")]
    pub gpu: Option<GpuBody>,
    #[serde(default, deserialize_with = "not_null")]
    pub cpu: Option<Vec<CpuBody>>,
    #[serde(default, deserialize_with = "not_null")]
    pub data_center_ids: Option<Vec<String>>,
    #[serde(default, deserialize_with = "not_null")]
    pub flashboot: Option<FlashBoot>,
    #[serde(default, deserialize_with = "not_null")]
    pub network_volumes: Option<Vec<String>>,
    #[serde(default, deserialize_with = "opt_integer")]
    pub timeout: Option<i64>,
    #[serde(default, deserialize_with = "not_null")]
    pub workers: Option<WorkersBody>,
}

impl EndpointBody {
    pub fn container(&self) -> ContainerPatch {
        container_patch_of!(self)
    }

    /// The schema of a create (`creating`) or an update body.
    pub fn schema(&self, creating: bool) -> V2Result<()> {
        let mut v = Violations::new();
        if creating {
            v.check(self.name.is_some(), "name", "required");
            v.check(self.endpoint_type.is_some(), "type", "required");
            v.check(self.scaling.is_some(), "scaling", "required");
            v.check(
                self.image.is_some() || self.template_id.is_some(),
                "image",
                "required unless templateId is set",
            );
            if let Some(t) = &self.template_id {
                v.check(!t.is_empty(), "templateId", "must not be empty");
            }
            if self.endpoint_type == Some(EndpointType::LoadBalancer)
                && let Some(s) = &self.scaling
            {
                v.check(
                    s.kind == ScalerType::RequestCount,
                    "scaling.type",
                    "must be REQUEST_COUNT for a LOAD_BALANCER endpoint",
                );
            }
        } else {
            v.check(
                self.endpoint_type.is_none(),
                "type",
                "unexpected property, not allowed here (the type is fixed at creation)",
            );
        }
        if let Some(name) = &self.name {
            v.check(!name.is_empty(), "name", "must not be empty");
        }
        if let Some(s) = &self.scaling {
            s.schema(&mut v);
        }
        self.container().schema(&mut v);
        if let Some(gpu) = &self.gpu {
            gpu.schema(&mut v, creating);
        }
        if let Some(cpu) = &self.cpu {
            v.check(
                !cpu.is_empty(),
                "cpu",
                "must name at least one configuration",
            );
            v.check(
                !rules::has_duplicates(cpu),
                "cpu",
                "must not repeat a configuration",
            );
            for (i, c) in cpu.iter().enumerate() {
                v.check(
                    !c.id.is_empty(),
                    &format!("cpu[{i}].id"),
                    "must not be empty",
                );
                v.range(
                    Some(c.vcpu_count),
                    &format!("cpu[{i}].vcpuCount"),
                    Some(2),
                    None,
                );
            }
        }
        if let Some(w) = &self.workers {
            v.range(w.min, "workers.min", Some(0), None);
            v.range(w.max, "workers.max", Some(0), None);
            v.range(w.idle_timeout, "workers.idleTimeout", Some(1), Some(3600));
        }
        v.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v2::request::parse_body;

    fn schema_errors(body: &str, creating: bool) -> Vec<String> {
        let b: EndpointBody = match parse_body(body.as_bytes()) {
            Ok(b) => b,
            Err(p) => return p.errors,
        };
        b.schema(creating)
            .err()
            .map(|p| p.errors)
            .unwrap_or_default()
    }

    const OK: &str = r#"{"name":"e","type":"QUEUE","image":"i","gpu":{"pools":["ADA_24"]},
        "scaling":{"type":"QUEUE_DELAY","queueDelay":4}}"#;

    #[test]
    fn a_minimal_create_passes() {
        assert!(schema_errors(OK, true).is_empty());
        let from_template = r#"{"name":"e","type":"QUEUE","templateId":"t",
            "scaling":{"type":"REQUEST_COUNT","requestCount":2}}"#;
        assert!(schema_errors(from_template, true).is_empty());
    }

    #[test]
    fn create_schema_violations_name_the_field() {
        for (body, field) in [
            (
                r#"{"type":"QUEUE","image":"i","scaling":{"type":"QUEUE_DELAY","queueDelay":4}}"#,
                "name",
            ),
            (
                r#"{"name":"e","image":"i","scaling":{"type":"QUEUE_DELAY","queueDelay":4}}"#,
                "type",
            ),
            (r#"{"name":"e","type":"QUEUE","image":"i"}"#, "scaling"),
            (
                r#"{"name":"e","type":"QUEUE","scaling":{"type":"QUEUE_DELAY","queueDelay":4}}"#,
                "image",
            ),
            (
                r#"{"name":"e","type":"QUEUE","image":"i","scaling":{"type":"QUEUE_DELAY"}}"#,
                "scaling.queueDelay",
            ),
            (
                r#"{"name":"e","type":"QUEUE","image":"i","scaling":{"type":"QUEUE_DELAY","queueDelay":0.1}}"#,
                "scaling.queueDelay",
            ),
            (
                r#"{"name":"e","type":"QUEUE","image":"i","scaling":{"type":"QUEUE_DELAY","queueDelay":1,"requestCount":1}}"#,
                "scaling.requestCount",
            ),
            (
                r#"{"name":"e","type":"LOAD_BALANCER","image":"i","scaling":{"type":"QUEUE_DELAY","queueDelay":4}}"#,
                "scaling.type",
            ),
            (
                r#"{"name":"e","type":"QUEUE","image":"i","scaling":{"type":"FAST"}}"#,
                "scaling.type",
            ),
            (
                r#"{"name":"e","type":"RPC","image":"i","scaling":{"type":"QUEUE_DELAY","queueDelay":4}}"#,
                "type",
            ),
            (
                r#"{"name":"","type":"QUEUE","image":"i","scaling":{"type":"QUEUE_DELAY","queueDelay":4}}"#,
                "name",
            ),
            (
                r#"{"name":"e","type":"QUEUE","image":"i","gpu":{"count":1},"scaling":{"type":"QUEUE_DELAY","queueDelay":4}}"#,
                "gpu.pools",
            ),
            (
                r#"{"name":"e","type":"QUEUE","image":"i","gpu":{"pools":[]},"scaling":{"type":"QUEUE_DELAY","queueDelay":4}}"#,
                "gpu.pools",
            ),
            (
                r#"{"name":"e","type":"QUEUE","image":"i","gpu":{"pools":["A"],"count":0},"scaling":{"type":"QUEUE_DELAY","queueDelay":4}}"#,
                "gpu.count",
            ),
            (
                r#"{"name":"e","type":"QUEUE","image":"i","gpu":{"pools":["A"],"minCudaVersion":"12"},"scaling":{"type":"QUEUE_DELAY","queueDelay":4}}"#,
                "gpu.minCudaVersion",
            ),
            (
                r#"{"name":"e","type":"QUEUE","image":"i","gpu":{"pools":["A"],"excludedTypes":["x","x"]},"scaling":{"type":"QUEUE_DELAY","queueDelay":4}}"#,
                "gpu.excludedTypes",
            ),
            (
                r#"{"name":"e","type":"QUEUE","image":"i","gpu":{"pools":["A"],"excludedTypes":["-x"]},"scaling":{"type":"QUEUE_DELAY","queueDelay":4}}"#,
                "gpu.excludedTypes[0]",
            ),
            (
                r#"{"name":"e","type":"QUEUE","image":"i","cpu":[],"scaling":{"type":"QUEUE_DELAY","queueDelay":4}}"#,
                "cpu",
            ),
            (
                r#"{"name":"e","type":"QUEUE","image":"i","cpu":[{"id":"c","vcpuCount":1}],"scaling":{"type":"QUEUE_DELAY","queueDelay":4}}"#,
                "cpu[0].vcpuCount",
            ),
            (
                r#"{"name":"e","type":"QUEUE","image":"i","workers":{"idleTimeout":0},"scaling":{"type":"QUEUE_DELAY","queueDelay":4}}"#,
                "workers.idleTimeout",
            ),
            (
                r#"{"name":"e","type":"QUEUE","image":"i","workers":{"min":-1},"scaling":{"type":"QUEUE_DELAY","queueDelay":4}}"#,
                "workers.min",
            ),
            (
                r#"{"name":"e","type":"QUEUE","image":"i","minCudaVersion":"12.8","scaling":{"type":"QUEUE_DELAY","queueDelay":4}}"#,
                "minCudaVersion",
            ),
            (
                r#"{"name":"e","type":"QUEUE","image":null,"scaling":{"type":"QUEUE_DELAY","queueDelay":4}}"#,
                "image",
            ),
        ] {
            let errors = schema_errors(body, true);
            assert!(
                errors.iter().any(|e| e.starts_with(&format!("{field}:"))),
                "{field}: {errors:?} for {body}"
            );
        }
    }

    #[test]
    fn update_schema() {
        assert!(schema_errors(r#"{"workers":{"max":5}}"#, false).is_empty());
        assert!(schema_errors(r#"{"gpu":{"minCudaVersion":""}}"#, false).is_empty());
        assert!(schema_errors(r#"{"gpu":{"count":2}}"#, false).is_empty());
        for (body, field) in [
            (r#"{"type":"QUEUE"}"#, "type"),
            (r#"{"gpu":{"excludedTypes":["x"]}}"#, "gpu.excludedTypes"),
            (r#"{"name":""}"#, "name"),
            (r#"{"registry":5}"#, "registry"),
        ] {
            let errors = schema_errors(body, false);
            assert!(
                errors.iter().any(|e| e.starts_with(&format!("{field}:"))),
                "{field}: {errors:?}"
            );
        }
    }
}
