//! The Template's decisions, pure: the platform template from the spec, what changed,
//! the words of each change, and which objects still use a template.
//! [`super::TemplateAdapter`] calls them with what it resolved and listed.

use kube::ResourceExt;

use gpucloud_crd::{Endpoint, LocalObjectReference, Pod, Template};
use gpucloud_platform::domain::{NewTemplate, Template as Remote, TemplateChange};

use gpucloud_engine::adapter::Plan;
use gpucloud_engine::marker::{InstallTag, remote_name_of};

/// Where a template's local volume is mounted when the spec does not say.
const DEFAULT_MOUNT_PATH: &str = "/workspace";

/// The template's name on the platform.
pub fn remote_name(obj: &Template, tag: Option<&InstallTag>) -> String {
    let status_name = obj.status.as_ref().and_then(|s| s.name.as_deref());
    remote_name_of(obj, obj.spec.name.as_deref(), status_name, tag)
}

/// The desired template from the spec, with env values and the registry id resolved, and
/// this install's tag for a name the spec does not give.
pub fn desired_of(
    obj: &Template,
    env: Vec<(String, String)>,
    registry_id: Option<String>,
    tag: Option<&InstallTag>,
) -> NewTemplate {
    let s = &obj.spec;
    let volume_gb = i64::from(s.volume_gb.unwrap_or(0));
    NewTemplate {
        name: remote_name(obj, tag),
        image: s.image.clone(),
        args: s.container.args.clone().unwrap_or_default(),
        container_disk_gb: s.container_disk_gb.map(i64::from),
        volume_gb,
        volume_mount_path: (volume_gb > 0).then(|| {
            s.volume_mount_path
                .clone()
                .unwrap_or_else(|| DEFAULT_MOUNT_PATH.to_string())
        }),
        env: env.into_iter().collect(),
        ports: s.container.ports.clone(),
        serverless: s.serverless,
        registry_id,
        category: s.category.map(|c| c.as_str().to_string()),
        start_ssh: s.start_ssh,
        start_jupyter: s.start_jupyter,
        allowed_cuda_versions: s.allowed_cuda_versions.clone(),
    }
}

fn differs<T: PartialEq + Clone>(want: &T, have: &T) -> Option<T> {
    (want != have).then(|| want.clone())
}

fn sorted(v: &[String]) -> Vec<String> {
    let mut v = v.to_vec();
    v.sort();
    v
}

/// Pure: what to change on `remote` to match `desired`. Fields the backend does not report
/// (`None` on the remote side) and settings the spec leaves to the platform are not
/// compared.
pub fn change_of(desired: &NewTemplate, remote: &Remote) -> TemplateChange {
    let volume = (desired.volume_gb, desired.volume_mount_path.clone());
    let have_volume = (remote.volume_gb, remote.volume_mount_path.clone());
    TemplateChange {
        name: differs(&desired.name, &remote.name),
        image: differs(&desired.image, &remote.image),
        args: differs(&desired.args, &remote.args),
        container_disk_gb: match (desired.container_disk_gb, remote.container_disk_gb) {
            (Some(want), Some(have)) if want != have => Some(want),
            (Some(want), None) => Some(want),
            _ => None,
        },
        volume: (volume.0 != have_volume.0 || (volume.0 > 0 && volume.1 != have_volume.1))
            .then_some(volume),
        env: differs(&desired.env, &remote.env),
        ports: (sorted(&desired.ports) != sorted(&remote.ports)).then(|| desired.ports.clone()),
        registry_id: differs(&desired.registry_id, &remote.registry_id),
        serverless: differs(&desired.serverless, &remote.serverless),
        category: match (&desired.category, &remote.category) {
            (Some(want), Some(have)) if want != have => Some(want.clone()),
            _ => None,
        },
        start_ssh: match (desired.start_ssh, remote.start_ssh) {
            (Some(want), Some(have)) if want != have => Some(want),
            _ => None,
        },
        start_jupyter: match (desired.start_jupyter, remote.start_jupyter) {
            (Some(want), Some(have)) if want != have => Some(want),
            _ => None,
        },
        allowed_cuda_versions: match &remote.allowed_cuda_versions {
            Some(have) if sorted(have) != sorted(&desired.allowed_cuda_versions) => {
                Some(desired.allowed_cuda_versions.clone())
            }
            _ => None,
        },
    }
}

/// Pure: the plan for `remote`: nothing, a change in place, or a replacement when the
/// change touches a field the backend cannot change in place.
pub fn plan_template(desired: &NewTemplate, remote: &Remote) -> Plan<TemplateChange> {
    let change = change_of(desired, remote);
    if change.is_empty() {
        return Plan::UpToDate;
    }
    let fixed: Vec<&str> = change
        .fields()
        .into_iter()
        .filter(|f| remote.fixed.contains(f))
        .collect();
    if !fixed.is_empty() {
        return Plan::Replace {
            reason: format!(
                "spec.{} cannot be changed in place on this platform API; the template is replaced",
                fixed.join(", spec.")
            ),
        };
    }
    Plan::Update(vec![change])
}

/// Records a change the platform accepted, so that status shows it before the next listing.
pub(super) fn applied(remote: &mut Remote, c: &TemplateChange) {
    if let Some(v) = &c.name {
        remote.name = v.clone();
    }
    if let Some(v) = &c.image {
        remote.image = v.clone();
    }
    if let Some(v) = &c.args {
        remote.args = v.clone();
    }
    if let Some(v) = c.container_disk_gb {
        remote.container_disk_gb = Some(v);
    }
    if let Some((gb, path)) = &c.volume {
        remote.volume_gb = *gb;
        remote.volume_mount_path = path.clone();
    }
    if let Some(v) = &c.env {
        remote.env = v.clone();
    }
    if let Some(v) = &c.ports {
        remote.ports = v.clone();
    }
    if let Some(v) = &c.registry_id {
        remote.registry_id = v.clone();
    }
    if let Some(v) = c.serverless {
        remote.serverless = v;
    }
    if let Some(v) = &c.category {
        remote.category = Some(v.clone());
    }
    if let Some(v) = c.start_ssh {
        remote.start_ssh = Some(v);
    }
    if let Some(v) = c.start_jupyter {
        remote.start_jupyter = Some(v);
    }
    if let Some(v) = &c.allowed_cuda_versions {
        remote.allowed_cuda_versions = Some(v.clone());
    }
}

/// The Template a platform template belongs to, when this process has seen it Ready.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    pub namespace: String,
    pub name: String,
}

/// Pure: the Endpoints and Pods (as `Kind namespace/name`) that use template `id`: by id
/// (an Endpoint's `templateId`, or the id it was last made with), or by a `templateRef` to
/// `owner` in its namespace.
pub fn users_of(
    id: &str,
    owner: Option<&Owner>,
    endpoints: &[Endpoint],
    pods: &[Pod],
) -> Vec<String> {
    let refers = |ns: Option<String>, reference: Option<&LocalObjectReference>| {
        owner.is_some_and(|o| {
            ns.as_deref() == Some(o.namespace.as_str())
                && reference.is_some_and(|r| r.name == o.name)
        })
    };
    let endpoint_users = endpoints.iter().filter(|e| {
        e.spec.template_id.as_deref() == Some(id)
            || e.status.as_ref().and_then(|s| s.template_id.as_deref()) == Some(id)
            || refers(e.namespace(), e.spec.template_ref.as_ref())
    });
    let pod_users = pods
        .iter()
        .filter(|p| refers(p.namespace(), p.spec.template_ref.as_ref()));
    let mut users: Vec<String> = endpoint_users
        .map(|e| {
            format!(
                "Endpoint {}/{}",
                e.namespace().unwrap_or_default(),
                e.name_any()
            )
        })
        .chain(
            pod_users
                .map(|p| format!("Pod {}/{}", p.namespace().unwrap_or_default(), p.name_any())),
        )
        .collect();
    users.sort();
    users
}

/// One line for the Event of a change: the fields, never their values (env may be secret).
pub fn describe_change(change: &TemplateChange) -> String {
    format!("updated the template's {}", change.fields().join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::shared::secret_env;
    use gpucloud_crd::TemplateSpec;
    use gpucloud_crd::container::{ContainerSettings, EnvVar, EnvVarSource, SecretKeySelector};
    use std::collections::BTreeMap;

    fn obj() -> Template {
        let mut t = Template::new(
            "worker",
            TemplateSpec {
                name: None,
                image: "ghcr.io/acme/worker:1".into(),
                container: ContainerSettings {
                    args: Some("python serve.py".into()),
                    ports: vec!["8000/http".into()],
                    env: vec![
                    EnvVar {
                        name: "MODE".into(),
                        value: Some("fast".into()),
                        value_from: None,
                    },
                    EnvVar {
                        name: "TOKEN".into(),
                        value: None,
                        value_from: Some(EnvVarSource {
                            secret_key_ref: SecretKeySelector {
                                name: "tok".into(),
                                key: "t".into(),
                            },
                        }),
                    },
                    ],
                },
                container_disk_gb: Some(20),
                volume_gb: None,
                volume_mount_path: None,
                serverless: true,
                category: None,
                allowed_cuda_versions: vec![],
                start_ssh: None,
                start_jupyter: None,
                registry_credential_ref: None,
                deletion_policy: Default::default(),
                management_policy: Default::default(),
                credentials_secret_ref: None,
            },
        );
        t.metadata = crate::kinds::shared::fixtures::applied("worker");
        t
    }

    fn desired() -> NewTemplate {
        desired_of(
            &obj(),
            vec![
                ("MODE".into(), "fast".into()),
                ("TOKEN".into(), "s3cr3t".into()),
            ],
            Some("reg-1".into()),
            None,
        )
    }

    /// The remote template as REST v2 reports `desired`.
    fn remote_of(d: &NewTemplate, fixed: &'static [&'static str]) -> Remote {
        Remote {
            id: "tpl-1".into(),
            name: d.name.clone(),
            image: d.image.clone(),
            args: d.args.clone(),
            container_disk_gb: d.container_disk_gb,
            volume_gb: d.volume_gb,
            volume_mount_path: d.volume_mount_path.clone(),
            env: d.env.clone(),
            ports: d.ports.clone(),
            serverless: d.serverless,
            registry_id: d.registry_id.clone(),
            category: Some("NVIDIA".into()),
            start_ssh: Some(true),
            start_jupyter: Some(true),
            allowed_cuda_versions: Some(vec![]),
            fixed,
        }
    }

    #[test]
    fn desired_has_the_default_name_and_resolved_values() {
        let d = desired();
        assert_eq!(d.name, "team-a-worker-1b4e28ba");
        assert_eq!(d.env, env_map(&[("MODE", "fast"), ("TOKEN", "s3cr3t")]));
        assert_eq!(d.volume_mount_path, None);
        assert!(!format!("{d:?}").contains("s3cr3t"));
    }

    #[test]
    fn up_to_date_when_the_platform_matches() {
        let d = desired();
        assert_eq!(plan_template(&d, &remote_of(&d, &[])), Plan::UpToDate);
    }

    #[test]
    fn image_env_and_registry_change_in_place() {
        let d = desired();
        let mut r = remote_of(&d, &[]);
        r.image = "ghcr.io/acme/worker:0".into();
        r.env.insert("TOKEN".into(), "old".into());
        r.registry_id = Some("reg-0".into());
        let Plan::Update(changes) = plan_template(&d, &r) else {
            panic!("want an update");
        };
        assert_eq!(
            changes[0].fields(),
            vec!["image", "env", "registryCredentialRef"]
        );
        let text = format!("{} {:?}", describe_change(&changes[0]), changes[0]);
        assert!(!text.contains("s3cr3t") && !text.contains("old"), "{text}");
        let mut after = r.clone();
        applied(&mut after, &changes[0]);
        assert_eq!(plan_template(&d, &after), Plan::UpToDate);
    }

    #[test]
    fn a_field_the_backend_cannot_change_replaces_the_template() {
        let d = desired();
        let mut r = remote_of(&d, &["serverless", "category"]);
        r.serverless = false;
        match plan_template(&d, &r) {
            Plan::Replace { reason } => assert!(reason.contains("spec.serverless"), "{reason}"),
            other => panic!("want Replace, got {other:?}"),
        }
        // On REST v2 the same change is made in place.
        let mut r = remote_of(&d, &[]);
        r.serverless = false;
        assert!(matches!(plan_template(&d, &r), Plan::Update(_)));
    }

    #[test]
    fn settings_the_backend_does_not_report_are_not_compared() {
        let mut d = desired();
        d.start_ssh = Some(false);
        let mut r = remote_of(&d, &["serverless", "category"]);
        (
            r.start_ssh,
            r.start_jupyter,
            r.allowed_cuda_versions,
            r.category,
        ) = (None, None, None, None);
        assert_eq!(plan_template(&d, &r), Plan::UpToDate);
        // Ports in another order are the same ports.
        let mut d = desired();
        d.ports = vec!["22/tcp".into(), "8000/http".into()];
        let mut r = remote_of(&d, &[]);
        r.ports = vec!["8000/http".into(), "22/tcp".into()];
        assert_eq!(plan_template(&d, &r), Plan::UpToDate);
    }

    #[test]
    fn a_volume_change_sends_size_and_path() {
        let mut d = desired();
        d.volume_gb = 50;
        d.volume_mount_path = Some("/data".into());
        let r = remote_of(&desired(), &[]);
        let change = change_of(&d, &r);
        assert_eq!(change.volume, Some((50, Some("/data".into()))));
    }

    #[test]
    fn users_are_the_endpoints_and_pods_naming_it() {
        let endpoint = |ns: &str, name: &str, spec: serde_json::Value, status_id: Option<&str>| {
            let mut base = serde_json::json!({"gpu": {"typeIds": ["NVIDIA A40"]}});
            base.as_object_mut()
                .unwrap()
                .extend(spec.as_object().unwrap().clone());
            let mut e: Endpoint = serde_json::from_value(serde_json::json!({
                "apiVersion": "gpucloud.io/v1beta1",
                "kind": "Endpoint",
                "metadata": {"name": name, "namespace": ns},
                "spec": base,
            }))
            .unwrap();
            if let Some(id) = status_id {
                e.status = Some(gpucloud_crd::EndpointStatus {
                    template_id: Some(id.into()),
                    ..Default::default()
                });
            }
            e
        };
        let pod = |ns: &str, name: &str, template: &str| -> Pod {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "gpucloud.io/v1beta1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"image": "i", "gpu": {"typeIds": ["A"]}, "templateRef": {"name": template}},
            }))
            .unwrap()
        };
        let endpoints = [
            endpoint(
                "team-a",
                "b",
                serde_json::json!({"templateId": "tpl-1"}),
                None,
            ),
            endpoint(
                "team-a",
                "a",
                serde_json::json!({"templateId": "x"}),
                Some("tpl-1"),
            ),
            endpoint(
                "team-a",
                "r",
                serde_json::json!({"templateRef": {"name": "worker"}}),
                None,
            ),
            endpoint(
                "team-b",
                "r",
                serde_json::json!({"templateRef": {"name": "worker"}}),
                None,
            ),
            endpoint(
                "team-a",
                "c",
                serde_json::json!({"templateId": "tpl-2"}),
                Some("tpl-2"),
            ),
        ];
        let pods = [pod("team-a", "p", "worker"), pod("team-a", "q", "other")];
        let owner = Owner {
            namespace: "team-a".into(),
            name: "worker".into(),
        };
        assert_eq!(
            users_of("tpl-1", Some(&owner), &endpoints, &pods),
            vec![
                "Endpoint team-a/a".to_string(),
                "Endpoint team-a/b".to_string(),
                "Endpoint team-a/r".to_string(),
                "Pod team-a/p".to_string(),
            ]
        );
        // Without knowing its Template, only the ids tell.
        assert_eq!(
            users_of("tpl-1", None, &endpoints, &pods),
            vec![
                "Endpoint team-a/a".to_string(),
                "Endpoint team-a/b".to_string()
            ]
        );
        assert!(users_of("tpl-3", None, &endpoints, &pods).is_empty());
    }

    #[test]
    fn secrets_lists_env_references() {
        let a = obj();
        let names: Vec<String> = secret_env::secret_names(&a.spec.container.env).collect();
        assert_eq!(names, vec!["tok".to_string()]);
    }

    fn env_map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }
}
