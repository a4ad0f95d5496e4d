//! Template and RegistryCredential end to end: a real kube-apiserver, the emulator over
//! real HTTP, the operator in-process. A private-image workload applied at once becomes
//! Ready in dependency order; a rotated registry login replaces the platform's credential
//! with no moment where the template names a deleted one; a Template in use is deleted
//! only after its users; bad manifests are refused or reported naming the field; and no
//! login or Secret value reaches a log line, an Event or a status. Run through
//! `scripts/test.sh` (they need `KUBECONFIG`).

mod common;

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use gpucloud_operator::crd::{Endpoint, Pod, RegistryCredential, Template};
use gpucloud_operator::demo::apply::{apply_objects, parse_documents};
use gpucloud_operator::demo::examples::EXAMPLES;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tokio::time::Instant;

use common::backend::is_v2;
use common::operator::{Env, condition, ready_now};

const TIMEOUT: Duration = Duration::from_secs(60);
/// Distinctive values, so that a leak cannot hide in other text.
const PASSWORD: &str = "pw-Q7mZ-never-print-1";
const PASSWORD_2: &str = "pw-Q7mZ-never-print-2";
const USERNAME: &str = "robot-Q7mZ-user";
const ENV_SECRET: &str = "env-Q7mZ-secret-value";
const EXAMPLE_PASSWORD: &str = "replace-me";

// --------------------------------------------------------------------------- log capture

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

static CAPTURE: OnceLock<Capture> = OnceLock::new();

/// Every log line of the process (operator, client, emulator) at DEBUG, installed before
/// `Env::start` would install its own subscriber.
fn capture_logs() {
    CAPTURE.get_or_init(|| {
        let capture = Capture::default();
        let writer = capture.clone();
        let _ = tracing_subscriber::fmt()
            .with_env_filter("info,gpucloud_operator=debug")
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .try_init();
        capture
    });
}

fn captured() -> String {
    CAPTURE
        .get()
        .map(|c| String::from_utf8_lossy(&c.0.lock().unwrap()).into_owned())
        .unwrap_or_default()
}

async fn start(prefix: &str) -> Env {
    capture_logs();
    Env::start(prefix).await
}

// --------------------------------------------------------------------------- helpers

fn docker_config(registry: &str, username: &str, password: &str) -> String {
    json!({"auths": {registry: {"username": username, "password": password}}}).to_string()
}

async fn put_secret(env: &Env, name: &str, type_: &str, key: &str, value: &str) {
    let secrets: Api<Secret> = env.api();
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": name},
        "type": type_,
        "stringData": {key: value},
    }))
    .unwrap();
    secrets
        .patch(
            name,
            &PatchParams::apply("e2e-templates").force(),
            &Patch::Apply(&secret),
        )
        .await
        .expect("Secret applied");
}

async fn create<K>(env: &Env, manifest: Value) -> Result<K, kube::Error>
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    let obj: K = serde_json::from_value(manifest).expect("a manifest of the kind");
    env.api::<K>().create(&PostParams::default(), &obj).await
}

fn registry_credential(name: &str, secret: &str, registry: &str) -> Value {
    json!({
        "apiVersion": "gpucloud.io/v1alpha1", "kind": "RegistryCredential",
        "metadata": {"name": name},
        "spec": {"secretRef": {"name": secret}, "registry": registry},
    })
}

fn template(name: &str, spec: Value) -> Value {
    let mut base = json!({"image": "registry.example.com/acme/worker:1", "serverless": true});
    base.as_object_mut()
        .unwrap()
        .extend(spec.as_object().unwrap().clone());
    json!({
        "apiVersion": "gpucloud.io/v1alpha1", "kind": "Template",
        "metadata": {"name": name},
        "spec": base,
    })
}

fn endpoint(name: &str, spec: Value) -> Value {
    let mut base = json!({"gpuTypeIds": ["NVIDIA A40"], "workersMin": 0, "workersMax": 1, "idleTimeoutSeconds": 5});
    base.as_object_mut()
        .unwrap()
        .extend(spec.as_object().unwrap().clone());
    json!({
        "apiVersion": "gpucloud.io/v1alpha1", "kind": "Endpoint",
        "metadata": {"name": name},
        "spec": base,
    })
}

/// The emulator's whole state, read at one instant.
async fn platform(env: &Env) -> Value {
    env.emulator.admin().state().await.expect("emulator state")
}

fn ids(state: &Value, collection: &str) -> Vec<String> {
    state[collection]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

fn record<'a>(state: &'a Value, collection: &str, id: &str) -> Option<&'a Value> {
    state[collection]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
}

fn id_of<K: gpucloud_operator::crd::ManagedKind>(obj: &K) -> String {
    obj.current_status()
        .and_then(|s| K::common(s).id.clone())
        .expect("status.id")
}

/// No login, password or Secret value in the logs, the namespace's Events, or the status
/// of any object of the namespace.
async fn assert_no_secret_anywhere(env: &Env, secrets: &[&str]) {
    let events: Api<K8sEvent> = env.api();
    let events = serde_json::to_string(&events.list(&Default::default()).await.unwrap()).unwrap();
    let templates = serde_json::to_string(
        &env.api::<Template>()
            .list(&Default::default())
            .await
            .unwrap(),
    )
    .unwrap();
    let credentials = serde_json::to_string(
        &env.api::<RegistryCredential>()
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .iter()
            .map(|c| &c.status)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let endpoints = serde_json::to_string(
        &env.api::<Endpoint>()
            .list(&Default::default())
            .await
            .unwrap(),
    )
    .unwrap();
    let logs = captured();
    assert!(!logs.is_empty(), "the log capture is not working");
    for (what, text) in [
        ("logs", &logs),
        ("Events", &events),
        ("Templates", &templates),
        ("RegistryCredential statuses", &credentials),
        ("Endpoints", &endpoints),
    ] {
        for secret in secrets {
            assert!(
                !text.contains(secret),
                "a Secret value appeared in the {what}"
            );
        }
    }
}

// --------------------------------------------------------------------------- tests

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

    // The first instant each object was Ready, seen by polling all three.
    let mut ready_at: [Option<Instant>; 3] = [None; 3];
    let deadline = Instant::now() + TIMEOUT;
    while ready_at.iter().any(Option::is_none) {
        assert!(Instant::now() < deadline, "not all Ready: {ready_at:?}");
        let c = env
            .api::<RegistryCredential>()
            .get("registry-login")
            .await
            .unwrap();
        let t = env.api::<Template>().get("worker").await.unwrap();
        let e = env.api::<Endpoint>().get("worker").await.unwrap();
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
        .list_api_group_resources("gpucloud.io/v1alpha1")
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
    put_secret(
        &env,
        "login",
        type_,
        ".dockerconfigjson",
        &docker_config("ghcr.io", USERNAME, PASSWORD),
    )
    .await;
    put_secret(&env, "app", "Opaque", "token", ENV_SECRET).await;
    create::<RegistryCredential>(&env, registry_credential("ghcr", "login", "ghcr.io"))
        .await
        .unwrap();
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
    put_secret(
        &env,
        "login",
        type_,
        ".dockerconfigjson",
        &docker_config("ghcr.io", USERNAME, PASSWORD_2),
    )
    .await;
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
    tokio::time::sleep(Duration::from_secs(3)).await;
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
    put_secret(
        &env,
        "opaque",
        "Opaque",
        ".dockerconfigjson",
        &docker_config("ghcr.io", USERNAME, PASSWORD),
    )
    .await;
    create::<RegistryCredential>(&env, registry_credential("wrong-type", "opaque", "ghcr.io"))
        .await
        .unwrap();
    put_secret(
        &env,
        "login",
        "kubernetes.io/dockerconfigjson",
        ".dockerconfigjson",
        &docker_config("ghcr.io", USERNAME, PASSWORD),
    )
    .await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_pod_deploys_from_its_template_and_credential() {
    capture_logs();
    let env = Env::start_with("tpl-pod", common::pods::config()).await;
    let operator = env.operator(&[]);
    put_secret(
        &env,
        "login",
        "kubernetes.io/dockerconfigjson",
        ".dockerconfigjson",
        &docker_config("ghcr.io", USERNAME, PASSWORD),
    )
    .await;
    let mut spec = json!({"templateRef": {"name": "notebook"}});
    if is_v2() {
        // The seed API has no pod-level credential (a Template's is the way there).
        spec["registryCredentialRef"] = json!({"name": "ghcr"});
    }
    // The Pod first: it waits for what it refers to.
    env.api::<Pod>()
        .create(&PostParams::default(), &common::pods::pod("train", spec))
        .await
        .unwrap();
    let waiting: Pod = env
        .wait_for("train", TIMEOUT, "waiting for its template", |p: &Pod| {
            p.status.as_ref().is_some_and(|s| {
                condition(&s.common.conditions, "Ready")
                    .is_some_and(|c| c.reason == "DependencyNotReady")
            })
        })
        .await;
    assert!(waiting.status.as_ref().unwrap().common.id.is_none());
    create::<RegistryCredential>(&env, registry_credential("ghcr", "login", "ghcr.io"))
        .await
        .unwrap();
    create::<Template>(
        &env,
        template(
            "notebook",
            json!({
                "serverless": false, "image": "ghcr.io/acme/train:1",
                "registryCredentialRef": {"name": "ghcr"},
                "env": [{"name": "MODE", "value": "from-template"}],
            }),
        ),
    )
    .await
    .unwrap();
    let pod: Pod = env.wait_for("train", TIMEOUT, "Ready", ready_now).await;
    let template: Template = env.wait_for("notebook", TIMEOUT, "Ready", ready_now).await;
    let credential: RegistryCredential = env.wait_for("ghcr", TIMEOUT, "Ready", ready_now).await;
    let pod_id = common::pods::id_of(&pod);
    let pods = env
        .platform
        .v2()
        .list_pods(&Default::default())
        .await
        .unwrap();
    let remote = pods
        .iter()
        .find(|p| p.id == pod_id)
        .expect("the pod on the platform");
    // The template's env reached the pod, under the Pod's own.
    assert_eq!(
        remote.env.get("MODE").map(String::as_str),
        Some("from-template")
    );
    if is_v2() {
        assert_eq!(
            remote.registry.as_deref(),
            Some(id_of(&credential).as_str())
        );
    } else {
        // The seed API links the pod to its template (REST v2 resolves it at create time).
        let seed = common::pods::remote_pods(&env).await;
        let seed = seed.iter().find(|p| p.id == pod_id).unwrap();
        assert_eq!(seed.template_id.as_deref(), Some(id_of(&template).as_str()));
        let _ = credential;
    }
    // Converged: the merged settings do not look like a change to the live pod.
    let calls = env.calls().await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let later = env.calls().await;
    let deploys = common::pods::deploy();
    assert_eq!(
        calls.get(deploys),
        later.get(deploys),
        "the pod was deployed again"
    );
    assert!(ready_now(&env.api::<Pod>().get("train").await.unwrap()));

    // The Template is not deleted while the Pod uses it (on REST v2 the platform would
    // allow it: the pod keeps no link), and goes with its last user.
    env.api::<Template>()
        .delete("notebook", &DeleteParams::default())
        .await
        .unwrap();
    let pod_user = format!("Pod {}/train", env.ns.name());
    env.wait_for("notebook", TIMEOUT, "held for its Pod", |t: &Template| {
        t.status.as_ref().is_some_and(|s| {
            condition(&s.common.conditions, "Ready")
                .is_some_and(|c| c.reason == "DeleteTemplateInUse" && c.message.contains(&pod_user))
        })
    })
    .await;
    assert!(record(&platform(&env).await, "templates", &id_of(&template)).is_some());
    env.api::<Pod>()
        .delete("train", &DeleteParams::default())
        .await
        .unwrap();
    let gone = common::wait_until(TIMEOUT, || async {
        env.api::<Template>()
            .get_opt("notebook")
            .await
            .unwrap()
            .is_none()
    })
    .await;
    assert!(gone, "the Template stayed after its Pod went");
    assert!(record(&platform(&env).await, "templates", &id_of(&template)).is_none());
    assert_no_secret_anywhere(&env, &[PASSWORD, USERNAME]).await;
    env.finish(operator).await;
}

/// The emulator's route names of the template and registry credential listings on this
/// run's backend.
fn list_routes() -> [&'static str; 2] {
    if is_v2() {
        ["GET /v2/templates", "GET /v2/registries"]
    } else {
        ["GET /v1/templates", "GET /v1/containerregistryauth"]
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn one_listing_per_kind_per_interval_whatever_the_number_of_objects() {
    const TEMPLATES: usize = 20;
    const CREDENTIALS: usize = 4;
    const POLL: Duration = Duration::from_secs(2);
    const INTERVALS: u32 = 3;
    let env = start("tpl-batch").await;
    let op = env.operator(&["--poll-interval=2s", "--concurrency=16"]);
    for i in 0..CREDENTIALS {
        let secret = format!("login-{i}");
        put_secret(
            &env,
            &secret,
            "kubernetes.io/dockerconfigjson",
            ".dockerconfigjson",
            &docker_config("ghcr.io", USERNAME, &format!("{PASSWORD}-{i}")),
        )
        .await;
        create::<RegistryCredential>(
            &env,
            registry_credential(&format!("cred-{i}"), &secret, "ghcr.io"),
        )
        .await
        .unwrap();
    }
    for i in 0..TEMPLATES {
        let credential = format!("cred-{}", i % CREDENTIALS);
        create::<Template>(
            &env,
            template(
                &format!("tpl-{i:02}"),
                json!({"registryCredentialRef": {"name": credential}}),
            ),
        )
        .await
        .unwrap();
    }
    let all_ready = common::wait_until(TIMEOUT, || async {
        let t = env
            .api::<Template>()
            .list(&Default::default())
            .await
            .unwrap();
        let c = env
            .api::<RegistryCredential>()
            .list(&Default::default())
            .await
            .unwrap();
        t.items.len() == TEMPLATES
            && c.items.len() == CREDENTIALS
            && t.items.iter().all(ready_now)
            && c.items.iter().all(ready_now)
    })
    .await;
    assert!(
        all_ready,
        "not every Template and RegistryCredential became Ready"
    );
    tokio::time::sleep(POLL).await;

    let before = env.calls().await;
    tokio::time::sleep(POLL * INTERVALS).await;
    let calls = common::operator::calls_since(&before, &env.calls().await);
    println!(
        "platform calls over {INTERVALS} resync intervals with {TEMPLATES} Templates and {CREDENTIALS} RegistryCredentials Ready: {calls:?}"
    );
    let mut lists = 0;
    for route in list_routes() {
        let n = calls.get(route).copied().unwrap_or(0);
        assert!(
            (1..=u64::from(INTERVALS) + 2).contains(&n),
            "{n} calls of {route} in {INTERVALS} intervals: {calls:?}"
        );
        lists += n;
    }
    assert_eq!(
        common::operator::total_calls(&calls),
        lists,
        "nothing but listings once converged: {calls:?}"
    );
    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn an_existing_template_is_adopted_by_id_and_changed_in_place() {
    let env = start("tpl-adopt").await;
    let operator = env.operator(&[]);
    let existing = env
        .platform
        .templates()
        .create(&gpucloud_operator::platform::domain::NewTemplate {
            name: "made-elsewhere".into(),
            image: "registry.example.com/acme/worker:1".into(),
            serverless: true,
            ..Default::default()
        })
        .await
        .unwrap();
    let mut manifest = template(
        "adopted",
        json!({"name": "made-elsewhere", "image": "registry.example.com/acme/worker:2"}),
    );
    manifest["metadata"]["annotations"] = json!({"gpucloud.io/external-id": existing.id});
    let creates_before = env.calls().await;
    create::<Template>(&env, manifest).await.unwrap();
    let adopted: Template = env
        .wait_for(
            "adopted",
            TIMEOUT,
            "Ready on the new image",
            |t: &Template| {
                ready_now(t)
                    && t.status.as_ref().unwrap().image.as_deref()
                        == Some("registry.example.com/acme/worker:2")
            },
        )
        .await;
    assert_eq!(id_of(&adopted), existing.id);
    let calls = common::operator::calls_since(&creates_before, &env.calls().await);
    let create_route = if is_v2() {
        "POST /v2/templates"
    } else {
        "POST /v1/templates"
    };
    assert_eq!(
        calls.get(create_route),
        None,
        "adopted, not created: {calls:?}"
    );
    let state = platform(&env).await;
    let remote = record(&state, "templates", &existing.id).unwrap();
    assert_eq!(remote["imageName"], "registry.example.com/acme/worker:2");
    let events = env.events_about("Template", "adopted").await;
    assert!(
        events
            .iter()
            .any(|e| e.reason.as_deref() == Some("Updated")),
        "{events:?}"
    );
    env.finish(operator).await;
}
