//! Template and RegistryCredential end to end, from their users' side: a Pod deploys from
//! its template and registry credential, and however many objects there are, the platform
//! sees one listing per kind per interval. A real kube-apiserver, the emulator over real
//! HTTP, the operator in-process. Run through `scripts/test.sh` (they need `KUBECONFIG`).

mod common;

use std::time::{Duration, Instant};

use gpucloud_crd::{Pod, RegistryCredential, Template};
use kube::api::{DeleteParams, PostParams};
use serde_json::json;

use common::backend::is_v2;
use common::operator::{Env, condition, ready_now};

use common::templates::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_pod_deploys_from_its_template_and_credential() {
    capture_logs();
    let env = Env::start_with("tpl-pod", common::pods::config()).await;
    let operator = env.operator(&[]);
    put_login(&env, "login", "kubernetes.io/dockerconfigjson", PASSWORD).await;
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
    create_ghcr_credential(&env).await;
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
        remote.container.env.get("MODE").map(String::as_str),
        Some("from-template")
    );
    if is_v2() {
        assert_eq!(
            remote.container.registry.as_deref(),
            Some(id_of(&credential).as_str())
        );
    } else {
        // The seed API links the pod to its template (REST v2 resolves it at create time).
        let seed = common::pods::remote_pods(&env).await;
        let seed = seed.iter().find(|p| p.id == pod_id).unwrap();
        assert_eq!(seed.template_id.as_deref(), Some(id_of(&template).as_str()));
        let _ = credential;
    }
    // Converged: the merged settings do not look like a change to the live pod, in two
    // passes over it (it is polled every 2 s).
    let calls = env.calls().await;
    operator.wait_more_passes("Pod", 2).await;
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
        put_login(
            &env,
            &secret,
            "kubernetes.io/dockerconfigjson",
            &format!("{PASSWORD}-{i}"),
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
    // The passes that follow the creates are over once every object has been passed over
    // once more: the periodic resync from then on.
    let kinds = [
        ("Template", TEMPLATES as u64),
        ("RegistryCredential", CREDENTIALS as u64),
    ];
    for (kind, objects) in kinds {
        op.wait_more_passes(kind, objects).await;
    }

    // A measurement: the calls over a span of resync intervals. The span lasts until every
    // object has been passed over at least once in it (longer than planned on a loaded
    // machine), so the resync ran in it, and the bound follows the span measured.
    let before = env.calls().await;
    let mut since = Vec::new();
    for (kind, _) in kinds {
        since.push(op.passes(kind).await);
    }
    let started = Instant::now();
    tokio::time::sleep(POLL * INTERVALS).await;
    for ((kind, objects), since) in kinds.into_iter().zip(since) {
        op.wait_passes(kind, since, objects).await;
    }
    let calls = common::calls::calls_since(&before, &env.calls().await);
    let intervals = (started.elapsed().as_secs_f64() / POLL.as_secs_f64()).ceil() as u64;
    println!(
        "platform calls over {intervals} resync intervals with {TEMPLATES} Templates and {CREDENTIALS} RegistryCredentials Ready: {calls:?}"
    );
    let mut lists = 0;
    for route in list_routes() {
        let n = calls.get(route).copied().unwrap_or(0);
        assert!(
            (1..=intervals + 2).contains(&n),
            "{n} calls of {route} in {intervals} intervals: {calls:?}"
        );
        lists += n;
    }
    assert_eq!(
        common::calls::total_calls(&calls),
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
        .create(&gpucloud_platform::domain::NewTemplate {
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
    let calls = common::calls::calls_since(&creates_before, &env.calls().await);
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
