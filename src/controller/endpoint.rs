//! The Endpoint adapter: serverless endpoints with their queue and worker health, and a
//! ConfigMap that tells in-cluster applications where to send jobs.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};

use crate::crd::Endpoint;
use crate::crd::endpoint::{EndpointHealth, EndpointStatus, JobCounts, ScalerType, WorkerCounts};
use crate::platform::{
    self, EndpointCreate, EndpointUpdate, Health, PlatformClient, PlatformError,
};

use super::adapter::{Adapter, CreateFailure, Plan, Readiness};
use super::context::{FIELD_MANAGER, Shared};
use super::dependency;
use super::failure::Failure;

/// Label on the connection ConfigMaps, naming the Endpoint that owns them.
pub const CONNECTION_LABEL: &str = "gpucloud.io/endpoint";

/// An endpoint as listed, plus the queue health fetched for Ready endpoints.
#[derive(Clone, Debug)]
pub struct RemoteEndpoint {
    pub record: platform::Endpoint,
    pub health: Option<Health>,
}

/// The endpoint as the spec wants it, with references resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DesiredEndpoint {
    pub name: String,
    pub template_id: String,
    pub gpu_type_ids: Vec<String>,
    pub gpu_count: i64,
    pub workers_min: i64,
    pub workers_max: i64,
    pub idle_timeout: i64,
    pub scaler_type: &'static str,
    pub scaler_value: i64,
    pub execution_timeout_ms: Option<i64>,
    pub flashboot: bool,
    pub network_volume_id: Option<String>,
}

fn scaler_word(t: ScalerType) -> &'static str {
    match t {
        ScalerType::QueueDelay => "QUEUE_DELAY",
        ScalerType::RequestCount => "REQUEST_COUNT",
    }
}

/// The remote name when the spec names none: namespace, name and a short UID suffix, so
/// the operator recognises its own endpoint after a crash.
pub fn default_remote_name(obj: &Endpoint) -> String {
    let uid = obj.uid().unwrap_or_default();
    let suffix: String = uid.chars().filter(|c| *c != '-').take(8).collect();
    format!(
        "{}-{}-{}",
        obj.namespace().unwrap_or_default(),
        obj.name_any(),
        suffix
    )
}

fn remote_name(obj: &Endpoint) -> String {
    obj.spec
        .name
        .clone()
        .unwrap_or_else(|| default_remote_name(obj))
}

/// Pure: the desired endpoint, given the network volume id already resolved.
pub fn desired_of(obj: &Endpoint, network_volume_id: Option<String>) -> DesiredEndpoint {
    let s = &obj.spec;
    DesiredEndpoint {
        name: remote_name(obj),
        template_id: s.template_id.clone(),
        gpu_type_ids: s.gpu_type_ids.clone(),
        gpu_count: i64::from(s.gpu_count),
        workers_min: i64::from(s.workers_min),
        workers_max: i64::from(s.workers_max),
        idle_timeout: i64::from(s.idle_timeout_seconds),
        scaler_type: scaler_word(s.scaler_type),
        scaler_value: i64::from(s.scaler_value),
        execution_timeout_ms: s.execution_timeout_ms,
        flashboot: s.flashboot,
        network_volume_id,
    }
}

fn extra_i64(record: &platform::Endpoint, key: &str) -> Option<i64> {
    record.extra.get(key).and_then(|v| v.as_i64())
}

/// Pure: the fields that differ, as one partial update.
pub fn plan_endpoint(
    desired: &DesiredEndpoint,
    record: &platform::Endpoint,
) -> Plan<EndpointUpdate> {
    fn differs<T: PartialEq + Clone>(want: &T, have: Option<T>) -> Option<T> {
        (have.as_ref() != Some(want)).then(|| want.clone())
    }
    let update = EndpointUpdate {
        name: differs(&desired.name, Some(record.name.clone())),
        template_id: differs(&desired.template_id, record.template_id.clone()),
        gpu_type_ids: differs(&desired.gpu_type_ids, Some(record.gpu_type_ids.clone())),
        gpu_count: differs(&desired.gpu_count, record.gpu_count),
        workers_min: differs(&desired.workers_min, record.workers_min),
        workers_max: differs(&desired.workers_max, record.workers_max),
        idle_timeout: differs(&desired.idle_timeout, record.idle_timeout),
        network_volume_id: match (&desired.network_volume_id, &record.network_volume_id) {
            (Some(want), have) if have.as_ref() != Some(want) => Some(want.clone()),
            _ => None,
        },
        execution_timeout_ms: match desired.execution_timeout_ms {
            Some(want) if extra_i64(record, "executionTimeoutMs") != Some(want) => Some(want),
            _ => None,
        },
        scaler_type: differs(
            &desired.scaler_type.to_string(),
            record
                .extra
                .get("scalerType")
                .and_then(|v| v.as_str())
                .map(str::to_string),
        ),
        scaler_value: differs(&desired.scaler_value, extra_i64(record, "scalerValue")),
        flashboot: differs(
            &desired.flashboot,
            record.extra.get("flashboot").and_then(|v| v.as_bool()),
        ),
    };
    if update == EndpointUpdate::default() {
        Plan::UpToDate
    } else {
        Plan::Update(vec![update])
    }
}

/// The job API base of an endpoint: `{serverless}/{id}/`.
pub fn endpoint_url(serverless: &str, id: &str) -> String {
    format!("{}/{id}/", serverless.trim_end_matches('/'))
}

/// The Endpoint kind.
#[derive(Default)]
pub struct EndpointAdapter {
    /// The connection ConfigMap last written per object (name, id, url), so it is written
    /// only when it changes.
    written: parking_lot::Mutex<HashMap<String, (String, String, String)>>,
}

impl EndpointAdapter {
    /// Writes (server-side apply) the connection ConfigMap when it changed, and removes
    /// one this Endpoint wrote under an earlier name.
    async fn write_connection(
        &self,
        shared: &Shared,
        obj: &Endpoint,
        id: &str,
        url: &str,
    ) -> Result<(), Failure> {
        let key = format!("{}/{}", obj.namespace().unwrap_or_default(), obj.name_any());
        let wanted = obj.spec.write_connection_to.clone();
        let previous = self.written.lock().get(&key).cloned();
        let current = wanted
            .clone()
            .map(|name| (name, id.to_string(), url.to_string()));
        if previous == current {
            return Ok(());
        }
        let config_maps: Api<ConfigMap> =
            Api::namespaced(shared.kube.clone(), &obj.namespace().unwrap_or_default());
        let kube_failure = |e: kube::Error| {
            Failure::retryable(
                "KubernetesUnavailable",
                format!("could not write the connection ConfigMap: {e}"),
            )
        };
        if let Some((name, id, url)) = &current {
            let owner = obj
                .controller_owner_ref(&())
                .expect("an Endpoint read from the API has a name and uid");
            let cm = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    labels: Some(BTreeMap::from([(
                        CONNECTION_LABEL.to_string(),
                        obj.name_any(),
                    )])),
                    owner_references: Some(vec![owner]),
                    ..Default::default()
                },
                data: Some(BTreeMap::from([
                    ("id".to_string(), id.clone()),
                    ("url".to_string(), url.clone()),
                ])),
                ..Default::default()
            };
            let body = serde_json::json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": cm.metadata,
                "data": cm.data,
            });
            config_maps
                .patch(
                    name,
                    &PatchParams::apply(FIELD_MANAGER).force(),
                    &Patch::Apply(body),
                )
                .await
                .map_err(kube_failure)?;
        }
        // A ConfigMap written under a name the spec no longer gives is this object's to remove.
        let selector = format!("{CONNECTION_LABEL}={}", obj.name_any());
        let owned = config_maps
            .list(&kube::api::ListParams::default().labels(&selector))
            .await
            .map_err(kube_failure)?;
        for stale in owned
            .items
            .iter()
            .filter(|cm| Some(cm.name_any()) != wanted)
        {
            let ours = stale
                .owner_references()
                .iter()
                .any(|o| Some(&o.uid) == obj.meta().uid.as_ref());
            if ours {
                config_maps
                    .delete(&stale.name_any(), &DeleteParams::default())
                    .await
                    .map_err(kube_failure)?;
            }
        }
        let mut written = self.written.lock();
        match current {
            Some(c) => written.insert(key, c),
            None => written.remove(&key),
        };
        Ok(())
    }
}

impl Adapter for EndpointAdapter {
    type Kind = Endpoint;
    type Remote = RemoteEndpoint;
    type Desired = DesiredEndpoint;
    type Change = EndpointUpdate;

    const KIND: &'static str = "Endpoint";
    const NOUN: &'static str = "endpoint";

    fn id(remote: &RemoteEndpoint) -> &str {
        &remote.record.id
    }

    async fn list(&self, client: &PlatformClient) -> Result<Vec<RemoteEndpoint>, PlatformError> {
        let records = client.rest().list_endpoints().await?;
        Ok(records
            .into_iter()
            .map(|record| RemoteEndpoint {
                record,
                health: None,
            })
            .collect())
    }

    fn claims(&self, obj: &Endpoint, remote: &RemoteEndpoint) -> bool {
        remote.record.name == remote_name(obj)
    }

    async fn desired(&self, shared: &Shared, obj: &Endpoint) -> Result<DesiredEndpoint, Failure> {
        let volume = dependency::network_volume_id(
            shared,
            &obj.namespace().unwrap_or_default(),
            obj.spec.network_volume_id.as_deref(),
            obj.spec.network_volume_ref.as_ref(),
        )
        .await?;
        Ok(desired_of(obj, volume))
    }

    async fn create(
        &self,
        client: &PlatformClient,
        _obj: &Endpoint,
        d: &DesiredEndpoint,
    ) -> Result<RemoteEndpoint, CreateFailure> {
        let input = EndpointCreate {
            name: d.name.clone(),
            template_id: d.template_id.clone(),
            gpu_type_ids: d.gpu_type_ids.clone(),
            workers_min: d.workers_min,
            workers_max: d.workers_max,
            idle_timeout: d.idle_timeout,
            gpu_count: Some(d.gpu_count),
            network_volume_id: d.network_volume_id.clone(),
            execution_timeout_ms: d.execution_timeout_ms,
            scaler_type: Some(d.scaler_type.to_string()),
            scaler_value: Some(d.scaler_value),
            data_center_ids: None,
            flashboot: Some(d.flashboot),
        };
        client
            .rest()
            .create_endpoint(&input)
            .await
            .map(|record| RemoteEndpoint {
                record,
                health: None,
            })
            .map_err(|e| CreateFailure::from_platform("create the endpoint", &e))
    }

    fn plan(
        &self,
        _obj: &Endpoint,
        desired: &DesiredEndpoint,
        remote: &RemoteEndpoint,
    ) -> Plan<EndpointUpdate> {
        plan_endpoint(desired, &remote.record)
    }

    async fn apply(
        &self,
        client: &PlatformClient,
        remote: &RemoteEndpoint,
        change: &EndpointUpdate,
    ) -> Result<(), Failure> {
        client
            .rest()
            .update_endpoint(&remote.record.id, change)
            .await
            .map(|_| ())
            .map_err(|e| Failure::from_platform("update the endpoint", &e))
    }

    async fn delete(&self, client: &PlatformClient, id: &str) -> Result<(), PlatformError> {
        client.rest().delete_endpoint(id).await
    }

    fn readiness(&self, _obj: &Endpoint, remote: &RemoteEndpoint) -> Readiness {
        Readiness::Ready {
            message: format!("endpoint {} matches the spec", remote.record.id),
        }
    }

    async fn after_sync(
        &self,
        shared: &Shared,
        client: &PlatformClient,
        obj: &Endpoint,
        remote: &mut RemoteEndpoint,
    ) -> Result<(), Failure> {
        let health = client
            .jobs()
            .health(&remote.record.id)
            .await
            .map_err(|e| Failure::from_platform("read the endpoint's health", &e))?;
        remote.health = Some(health);
        let url = endpoint_url(
            shared.platform.urls().serverless.as_str(),
            &remote.record.id,
        );
        self.write_connection(shared, obj, &remote.record.id, &url)
            .await
    }

    fn status(
        &self,
        shared: &Shared,
        obj: &Endpoint,
        remote: Option<&RemoteEndpoint>,
    ) -> EndpointStatus {
        let mut status = obj.status.clone().unwrap_or_default();
        let Some(remote) = remote else { return status };
        let r = &remote.record;
        status.url = Some(endpoint_url(
            shared.platform.urls().serverless.as_str(),
            &r.id,
        ));
        status.name = Some(r.name.clone());
        status.template_id = r.template_id.clone();
        status.gpu_type_ids = r.gpu_type_ids.clone();
        status.workers_min = r.workers_min.and_then(|v| i32::try_from(v).ok());
        status.workers_max = r.workers_max.and_then(|v| i32::try_from(v).ok());
        if let Some(h) = &remote.health {
            status.health = Some(EndpointHealth {
                jobs: JobCounts {
                    completed: h.jobs.completed,
                    failed: h.jobs.failed,
                    in_progress: h.jobs.in_progress,
                    in_queue: h.jobs.in_queue,
                    retried: h.jobs.retried,
                },
                workers: WorkerCounts {
                    idle: h.workers.idle,
                    running: h.workers.running,
                },
            });
            status.workers = Some(format!(
                "{}/{}",
                h.workers.running,
                r.workers_max.unwrap_or_default()
            ));
        }
        status
    }

    fn describe(&self, change: &EndpointUpdate) -> String {
        let fields = serde_json::to_value(change)
            .ok()
            .and_then(|v| v.as_object().map(|m| m.keys().cloned().collect::<Vec<_>>()));
        format!(
            "updated the endpoint: {}",
            fields.unwrap_or_default().join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(extra: serde_json::Value) -> platform::Endpoint {
        let mut v = json!({
            "id": "ep-1", "name": "team-web-1234abcd", "templateId": "tmpl-a", "gpuTypeIds": ["NVIDIA A40"],
            "gpuCount": 1, "workersMin": 0, "workersMax": 3, "idleTimeout": 5,
            "scalerType": "QUEUE_DELAY", "scalerValue": 4, "flashboot": false
        });
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::from_value(v).unwrap()
    }

    fn desired() -> DesiredEndpoint {
        DesiredEndpoint {
            name: "team-web-1234abcd".into(),
            template_id: "tmpl-a".into(),
            gpu_type_ids: vec!["NVIDIA A40".into()],
            gpu_count: 1,
            workers_min: 0,
            workers_max: 3,
            idle_timeout: 5,
            scaler_type: "QUEUE_DELAY",
            scaler_value: 4,
            execution_timeout_ms: None,
            flashboot: false,
            network_volume_id: None,
        }
    }

    #[test]
    fn equal_endpoint_is_up_to_date() {
        assert_eq!(
            plan_endpoint(&desired(), &record(json!({}))),
            Plan::UpToDate
        );
    }

    #[test]
    fn only_changed_fields_are_sent() {
        let d = DesiredEndpoint {
            workers_max: 5,
            flashboot: true,
            ..desired()
        };
        match plan_endpoint(&d, &record(json!({}))) {
            Plan::Update(changes) => {
                assert_eq!(changes.len(), 1);
                let sent = serde_json::to_value(&changes[0]).unwrap();
                assert_eq!(sent, json!({"workersMax": 5, "flashboot": true}));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn gpu_priority_order_matters() {
        let d = DesiredEndpoint {
            gpu_type_ids: vec!["NVIDIA A40".into(), "NVIDIA L40S".into()],
            ..desired()
        };
        assert!(matches!(
            plan_endpoint(&d, &record(json!({}))),
            Plan::Update(_)
        ));
        let reordered = record(json!({"gpuTypeIds": ["NVIDIA L40S", "NVIDIA A40"]}));
        assert!(matches!(plan_endpoint(&d, &reordered), Plan::Update(_)));
    }

    #[test]
    fn url_is_the_job_api_base() {
        assert_eq!(
            endpoint_url("http://127.0.0.1:9/v2", "ep-1"),
            "http://127.0.0.1:9/v2/ep-1/"
        );
        assert_eq!(
            endpoint_url("http://127.0.0.1:9/v2/", "ep-1"),
            "http://127.0.0.1:9/v2/ep-1/"
        );
    }
}
