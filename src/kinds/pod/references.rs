//! What a Pod's references to a `Template` and a `RegistryCredential` resolve to (kept out
//! of the Pod adapter, which has enough to do).
//!
//! The platform fills what a deploy leaves out from the template, and reports the merged
//! pod; so that the Pod adapter compares like with like, the template's settings are
//! merged into the request here, the Pod's own fields winning: env per name, and ports,
//! args and the local volume when the Pod sets none.

use kube::ResourceExt;

use gpucloud_crd::{Pod, RegistryCredential, Template};
use gpucloud_platform::domain::PodRequest;

use crate::kinds::shared::dependency;
use crate::kinds::shared::secret_env;
use gpucloud_engine::context::Shared;
use gpucloud_engine::failure::Failure;

/// Sets `request.template_id` (with the template's settings merged in) and
/// `request.registry_id` from `spec.templateRef` and `spec.registryCredentialRef`, waiting
/// while either is missing or not Ready.
pub async fn resolve_pod_references(
    shared: &Shared,
    obj: &Pod,
    request: &mut PodRequest,
) -> Result<(), Failure> {
    let ns = obj.namespace().unwrap_or_default();
    if let Some(r) = &obj.spec.template_ref {
        let (template, id) =
            dependency::ready_object::<Template>(shared, &ns, &r.name, "spec.templateRef").await?;
        let env = secret_env::resolve(shared, &ns, &template.spec.container.env)
            .await
            .map_err(|f| Failure {
                message: format!("Template {}: {}", r.name, f.message),
                ..f
            })?;
        merge_template(request, &template, env);
        request.template_id = Some(id);
    }
    if let Some(r) = &obj.spec.registry_credential_ref {
        request.registry_id = Some(
            dependency::ready_id::<RegistryCredential>(
                shared,
                &ns,
                &r.name,
                "spec.registryCredentialRef",
            )
            .await?,
        );
    }
    Ok(())
}

/// Pure: the template's settings under the request's own (`template_env` resolved).
pub fn merge_template(
    request: &mut PodRequest,
    template: &Template,
    template_env: Vec<(String, String)>,
) {
    let t = &template.spec;
    for (name, value) in template_env {
        if !request.env.iter().any(|(k, _)| *k == name) {
            request.env.push((name, value));
        }
    }
    request.env.sort();
    if request.ports.is_empty() {
        request.ports = t.container.ports.clone();
        request.ports.sort();
        request.ports.dedup();
    }
    if request.docker_args.is_none() {
        request.docker_args = t.container.args.clone().filter(|a| !a.is_empty());
    }
    if request.volume_gb == 0
        && let Some(gb) = t.volume_gb.filter(|gb| *gb > 0)
    {
        request.volume_gb = gb;
        if request.volume_mount_path.is_none() {
            request.volume_mount_path = t.volume_mount_path.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpucloud_crd::TemplateSpec;
    use serde_json::json;

    fn request() -> PodRequest {
        PodRequest {
            name: "p".into(),
            image: "img:1".into(),
            env: vec![("MODE".into(), "pod".into())],
            container_disk_gb: 20,
            gpu_count: 1,
            ..Default::default()
        }
    }

    fn template(spec: serde_json::Value) -> Template {
        let spec: TemplateSpec = serde_json::from_value(spec).unwrap();
        Template::new("t", spec)
    }

    #[test]
    fn the_pod_wins_and_the_template_fills_the_rest() {
        let t = template(json!({
            "image": "img:t", "args": "serve", "ports": ["8888/http"],
            "volumeGb": 30, "volumeMountPath": "/data",
        }));
        let mut r = request();
        merge_template(
            &mut r,
            &t,
            vec![
                ("MODE".into(), "template".into()),
                ("TOKEN".into(), "x".into()),
            ],
        );
        assert_eq!(
            r.env,
            vec![
                ("MODE".to_string(), "pod".to_string()),
                ("TOKEN".to_string(), "x".to_string())
            ]
        );
        assert_eq!(r.ports, vec!["8888/http".to_string()]);
        assert_eq!(r.docker_args.as_deref(), Some("serve"));
        assert_eq!(
            (r.volume_gb, r.volume_mount_path.as_deref()),
            (30, Some("/data"))
        );
        // The image stays the Pod's.
        assert_eq!(r.image, "img:1");

        let mut own = request();
        own.ports = vec!["22/tcp".into()];
        own.docker_args = Some("train".into());
        own.volume_gb = 5;
        merge_template(&mut own, &t, vec![]);
        assert_eq!(own.ports, vec!["22/tcp".to_string()]);
        assert_eq!(own.docker_args.as_deref(), Some("train"));
        assert_eq!((own.volume_gb, own.volume_mount_path.as_deref()), (5, None));
    }
}
