//! Template and RegistryCredential end to end: a real kube-apiserver, the emulator over
//! real HTTP, the operator in-process. A private-image workload applied at once becomes
//! Ready in dependency order; a rotated registry login replaces the platform's credential
//! with no moment where the template names a deleted one; a Template in use is deleted
//! only after its users; bad manifests are refused or reported naming the field; and no
//! login or Secret value reaches a log line, an Event or a status (the Pods that use them:
//! `e2e_template_users.rs`). Run through
//! `scripts/test.sh` (they need `KUBECONFIG`).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use gpucloud_crd::{Endpoint, RegistryCredential, Template};
use gpucloud_operator::demo::apply::{apply_objects, parse_documents};
use gpucloud_operator::demo::examples::EXAMPLES;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use serde_json::json;
use tokio::time::Instant;

use common::operator::{condition, ready_now};

use common::templates::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn the_private_image_example_becomes_ready_in_dependency_order() {
    let env = start("tpl-example").await;
    let operator = env.operator(&[]);
    let (_, text) = EXAMPLES
        .iter()
        .find(|(f, _)| *f == "private-image-endpoint.yaml")
        .expect("the example is listed");
    let objects = parse_documents(text, "private-image-endpoint.yaml").unwrap();
    apply_objects(&env.client, env.ns.name(), &objects, "e2e-templates")
        .await
        .expect("the example applies");

    // The first round of polling in which each object was Ready. Each round reads the
    // dependents first: an object that became Ready before the one read ahead of it is
    // then seen Ready in the same round. Read the other way, a credential that became Ready
    // just after its read, and the template that followed it within the next read, were
    // seen a round apart in the wrong order (on a loaded CI machine).
    let mut ready_at: [Option<Instant>; 3] = [None; 3];
    let deadline = Instant::now() + TIMEOUT;
    while ready_at.iter().any(Option::is_none) {
        assert!(Instant::now() < deadline, "not all Ready: {ready_at:?}");
        let e = env.api::<Endpoint>().get("worker").await.unwrap();
        let t = env.api::<Template>().get("worker").await.unwrap();
        let c = env
            .api::<RegistryCredential>()
            .get("registry-login")
            .await
            .unwrap();
        let now = Instant::now();
        for (slot, ready) in ready_at
            .iter_mut()
            .zip([ready_now(&c), ready_now(&t), ready_now(&e)])
        {
            if ready && slot.is_none() {
                *slot = Some(now);
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let [c, t, e] = ready_at.map(Option::unwrap);
    assert!(
        c <= t && t <= e,
        "Ready out of order: credential {c:?}, template {t:?}, endpoint {e:?}"
    );

    let credential = env
        .api::<RegistryCredential>()
        .get("registry-login")
        .await
        .unwrap();
    let template = env.api::<Template>().get("worker").await.unwrap();
    let endpoint = env.api::<Endpoint>().get("worker").await.unwrap();
    let state = platform(&env).await;
    let remote_template = record(&state, "templates", &id_of(&template)).expect("the template");
    assert_eq!(remote_template["registry"], json!(id_of(&credential)));
    assert_eq!(
        remote_template["imageName"],
        "registry.example.com/acme/worker:1.4"
    );
    let remote_endpoint = record(&state, "endpoints", &id_of(&endpoint)).expect("the endpoint");
    assert_eq!(remote_endpoint["templateId"], json!(id_of(&template)));
    assert_eq!(
        template.status.as_ref().unwrap().registry_id.as_deref(),
        Some(id_of(&credential).as_str())
    );

    // `kubectl get gpucloud` lists every kind of the operator.
    let resources = env
        .client
        .list_api_group_resources("gpucloud.io/v1beta1")
        .await
        .unwrap();
    let mut in_category: Vec<String> = resources
        .resources
        .iter()
        .filter(|r| {
            r.categories
                .as_ref()
                .is_some_and(|c| c.contains(&"gpucloud".to_string()))
        })
        .map(|r| r.kind.clone())
        .collect();
    in_category.sort();
    let mut registered: Vec<String> = gpucloud_operator::kinds::KINDS
        .iter()
        .map(|k| (k.crd)().spec.names.kind)
        .collect();
    registered.sort();
    assert!(
        ["RegistryCredential", "Template"]
            .iter()
            .all(|k| registered.iter().any(|r| r == k)),
        "{registered:?}"
    );
    assert_eq!(in_category, registered);

    assert_no_secret_anywhere(&env, &[EXAMPLE_PASSWORD]).await;
    env.finish(operator).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_rotated_login_replaces_the_credential_without_a_gap() {
    let env = start("tpl-rotate").await;
    let operator = env.operator(&[]);
    let type_ = "kubernetes.io/dockerconfigjson";
    put_login(&env, "login", type_, PASSWORD).await;
    put_secret(&env, "app", "Opaque", "token", ENV_SECRET).await;
    create_ghcr_credential(&env).await;
    create::<Template>(
        &env,
        template(
            "worker",
            json!({
                "registryCredentialRef": {"name": "ghcr"},
                "env": [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "app", "key": "token"}}}],
            }),
        ),
    )
    .await
    .unwrap();
    let credential: RegistryCredential = env.wait_for("ghcr", TIMEOUT, "Ready", ready_now).await;
    let template: Template = env
        .wait_for(
            "worker",
            TIMEOUT,
            "Ready with the credential",
            |t: &Template| {
                ready_now(t)
                    && t.status.as_ref().unwrap().registry_id
                        == credential.status.as_ref().unwrap().common.id
            },
        )
        .await;
    let old = id_of(&credential);
    let template_id = id_of(&template);
    let state = platform(&env).await;
    assert_eq!(
        record(&state, "templates", &template_id).unwrap()["env"]["TOKEN"],
        ENV_SECRET
    );

    // Watch the platform while the login rotates: at every instant the template names a
    // credential that exists.
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let admin = env.emulator.admin();
        let stop = stop.clone();
        let template_id = template_id.clone();
        tokio::spawn(async move {
            let (mut samples, mut gaps) = (0u32, Vec::new());
            while !stop.load(Ordering::Relaxed) {
                let state = admin.state().await.expect("emulator state");
                let registry =
                    record(&state, "templates", &template_id).map(|t| t["registry"].clone());
                let exists = registry
                    .as_ref()
                    .and_then(|r| r.as_str())
                    .is_some_and(|r| ids(&state, "registries").iter().any(|id| id == r));
                if !exists {
                    gaps.push(registry);
                }
                samples += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            (samples, gaps)
        })
    };
    put_login(&env, "login", type_, PASSWORD_2).await;
    let rotated: RegistryCredential = env
        .wait_for(
            "ghcr",
            TIMEOUT,
            "a new credential, the old one deleted",
            |c: &RegistryCredential| {
                let s = c.status.as_ref().unwrap();
                ready_now(c)
                    && s.common.id.as_deref() != Some(old.as_str())
                    && s.retiring_ids.is_empty()
            },
        )
        .await;
    let new = id_of(&rotated);
    env.wait_for(
        "worker",
        TIMEOUT,
        "on the new credential",
        |t: &Template| t.status.as_ref().unwrap().registry_id.as_deref() == Some(new.as_str()),
    )
    .await;
    stop.store(true, Ordering::Relaxed);
    let (samples, gaps) = sampler.await.unwrap();
    assert!(samples >= 5, "only {samples} samples of the platform");
    assert!(
        gaps.is_empty(),
        "the template named a missing credential: {gaps:?}"
    );
    let state = platform(&env).await;
    let registries = ids(&state, "registries");
    assert!(
        !registries.contains(&old),
        "the replaced credential is still registered"
    );
    assert!(registries.contains(&new));
    assert_ne!(
        credential.status.as_ref().unwrap().secret_hash,
        rotated.status.as_ref().unwrap().secret_hash
    );

    assert_no_secret_anywhere(&env, &[PASSWORD, PASSWORD_2, USERNAME, ENV_SECRET]).await;
    env.finish(operator).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_template_in_use_is_deleted_after_its_users() {
    let env = start("tpl-in-use").await;
    let operator = env.operator(&[]);
    // The Endpoint first: it waits, naming the field, and makes nothing.
    create::<Endpoint>(
        &env,
        endpoint("infer", json!({"templateRef": {"name": "worker"}})),
    )
    .await
    .unwrap();
    let waiting: Endpoint = env
        .wait_for(
            "infer",
            TIMEOUT,
            "waiting for its Template",
            |e: &Endpoint| {
                e.status.as_ref().is_some_and(|s| {
                    condition(&s.common.conditions, "Ready").is_some_and(|c| {
                        c.reason == "DependencyNotReady" && c.message.contains("spec.templateRef")
                    })
                })
            },
        )
        .await;
    assert!(waiting.status.as_ref().unwrap().common.id.is_none());
    create::<Template>(&env, template("worker", json!({})))
        .await
        .unwrap();
    let template: Template = env.wait_for("worker", TIMEOUT, "Ready", ready_now).await;
    let endpoint: Endpoint = env.wait_for("infer", TIMEOUT, "Ready", ready_now).await;
    let template_id = id_of(&template);
    let endpoint_id = id_of(&endpoint);

    env.api::<Template>()
        .delete("worker", &DeleteParams::default())
        .await
        .unwrap();
    // Held by its finalizer, with a condition that names the user.
    let held: Template = env
        .wait_for(
            "worker",
            TIMEOUT,
            "a condition naming its user",
            |t: &Template| {
                t.status.as_ref().is_some_and(|s| {
                    condition(&s.common.conditions, "Ready").is_some_and(|c| {
                        c.reason.starts_with("Delete")
                            && (c.message.contains("Endpoint") || c.message.contains(&endpoint_id))
                    })
                })
            },
        )
        .await;
    assert!(held.metadata.deletion_timestamp.is_some());
    // Still held after a later pass over it: the touch brings one whatever it waits for.
    operator.pass_over(&env.api::<Template>(), "worker").await;
    assert!(
        env.api::<Template>()
            .get_opt("worker")
            .await
            .unwrap()
            .is_some()
    );
    assert!(record(&platform(&env).await, "templates", &template_id).is_some());

    env.api::<Endpoint>()
        .delete("infer", &DeleteParams::default())
        .await
        .unwrap();
    let gone = common::wait_until(TIMEOUT, || async {
        env.api::<Template>()
            .get_opt("worker")
            .await
            .unwrap()
            .is_none()
    })
    .await;
    assert!(gone, "the Template stayed after its last user went");
    assert!(record(&platform(&env).await, "templates", &template_id).is_none());
    env.finish(operator).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn bad_manifests_are_refused_or_reported_naming_the_field() {
    let env = start("tpl-bad").await;
    let operator = env.operator(&[]);

    // Refused at admission.
    let both = create::<Endpoint>(
        &env,
        endpoint(
            "both",
            json!({"templateId": "tmpl-worker-base", "templateRef": {"name": "worker"}}),
        ),
    )
    .await
    .unwrap_err();
    assert!(
        both.to_string()
            .contains("set exactly one of templateId and templateRef"),
        "{both}"
    );
    // A manifest without `spec.registry` cannot even be typed here: it goes untyped.
    let mut no_registry = registry_credential("no-host", "login", "x");
    no_registry["spec"]
        .as_object_mut()
        .unwrap()
        .remove("registry");
    let untyped: Api<kube::api::DynamicObject> = Api::namespaced_with(
        env.client.clone(),
        env.ns.name(),
        &kube::api::ApiResource::erase::<RegistryCredential>(&()),
    );
    let missing = untyped
        .create(
            &PostParams::default(),
            &serde_json::from_value(no_registry).unwrap(),
        )
        .await
        .unwrap_err();
    assert!(missing.to_string().contains("registry"), "{missing}");
    let with_scheme = create::<RegistryCredential>(
        &env,
        registry_credential("scheme", "login", "https://ghcr.io"),
    )
    .await
    .unwrap_err();
    assert!(
        with_scheme.to_string().contains("spec.registry"),
        "{with_scheme}"
    );

    // Reported with a condition naming the field.
    put_login(&env, "opaque", "Opaque", PASSWORD).await;
    create::<RegistryCredential>(&env, registry_credential("wrong-type", "opaque", "ghcr.io"))
        .await
        .unwrap();
    put_login(&env, "login", "kubernetes.io/dockerconfigjson", PASSWORD).await;
    create::<RegistryCredential>(&env, registry_credential("other-host", "login", "quay.io"))
        .await
        .unwrap();
    for (name, reason, field) in [
        ("wrong-type", "WrongSecretType", "spec.secretRef"),
        ("other-host", "RegistryNotInSecret", "spec.registry"),
    ] {
        let c: RegistryCredential = env
            .wait_for(name, TIMEOUT, reason, |c: &RegistryCredential| {
                c.status.as_ref().is_some_and(|s| {
                    condition(&s.common.conditions, "Stalled")
                        .is_some_and(|c| c.status == "True" && c.reason == reason)
                })
            })
            .await;
        let stalled = condition(&c.status.as_ref().unwrap().common.conditions, "Stalled").unwrap();
        assert!(stalled.message.contains(field), "{}", stalled.message);
        assert!(c.status.as_ref().unwrap().common.id.is_none());
        let events = env.events_about("RegistryCredential", name).await;
        assert!(
            events.iter().any(|e| e.reason.as_deref() == Some(reason)),
            "{events:?}"
        );
    }
    assert!(ids(&platform(&env).await, "registries").is_empty());
    assert_no_secret_anywhere(&env, &[PASSWORD, USERNAME]).await;
    env.finish(operator).await;
}
