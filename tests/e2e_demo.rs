//! `gpucloud-operator demo`, the README's first command, run as a user runs it (the binary,
//! non-interactively with --until-ready): on the cluster in KUBECONFIG, and with no
//! KUBECONFIG on a local control plane of its own. Run through `scripts/test.sh`.

mod common;

use std::collections::BTreeSet;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use futures::StreamExt;
use gpucloud_crd::ManagedKind;
use gpucloud_crd::{Cluster, Endpoint, NetworkVolume, Pod, RegistryCredential, Template};
use gpucloud_operator::demo::apply::parse_documents;
use gpucloud_operator::demo::examples::{EXAMPLES, runs_on};
use k8s_openapi::api::core::v1::Namespace;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use tokio::sync::mpsc;

use common::kube_client;
use common::operator::ready_now;

/// Every gpucloud.io object of `examples/`, as KIND/NAME.
fn example_objects() -> BTreeSet<String> {
    EXAMPLES
        .iter()
        .flat_map(|(file, text)| parse_documents(text, file).unwrap())
        .filter(|o| runs_on(common::backend::backend(), o))
        .filter_map(|o| {
            let types = o.types.clone()?;
            types
                .api_version
                .starts_with("gpucloud.io/")
                .then(|| format!("{}/{}", types.kind, o.metadata.name.clone().unwrap()))
        })
        .collect()
}

fn demo(args: &[&str], kubeconfig: Option<&str>) -> std::process::Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_gpucloud-operator"));
    command
        .arg("demo")
        .arg(format!("--platform-api={}", common::backend::backend()))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match kubeconfig {
        Some(path) => command.env("KUBECONFIG", path),
        None => command.env_remove("KUBECONFIG"),
    };
    command.spawn().expect("start the demo")
}

/// Waits for the demo to exit, which it must do with success; its stdout and stderr.
async fn succeeds(child: std::process::Child) -> (String, String) {
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .expect("the demo ran");
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "demo failed:\n{stdout}\n{stderr}");
    (stdout, stderr)
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The rows of the last table the demo printed, as (KIND/NAME, READY).
fn last_table(stdout: &str) -> Vec<(String, String)> {
    let start = stdout.rfind("KIND ").expect("a table");
    stdout[start..]
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            (
                format!("{}/{}", cells[0], cells[1]),
                cells.last().unwrap().to_string(),
            )
        })
        .collect()
}

/// Names (KIND/NAME) of the objects in `namespace` as they are seen Ready for their
/// generation, from watches: every state the apiserver holds is seen, however briefly.
fn watch_ready(client: &kube::Client, namespace: &str) -> mpsc::UnboundedReceiver<String> {
    let (tx, rx) = mpsc::unbounded_channel();
    watch_kind::<Pod>(client, namespace, tx.clone());
    watch_kind::<Cluster>(client, namespace, tx.clone());
    watch_kind::<Endpoint>(client, namespace, tx.clone());
    watch_kind::<NetworkVolume>(client, namespace, tx.clone());
    watch_budgets(client, namespace, tx.clone());
    watch_kind::<Template>(client, namespace, tx.clone());
    watch_kind::<RegistryCredential>(client, namespace, tx);
    rx
}

/// Sends Budget/NAME of every Budget seen Ready (enforced) for its generation. A Budget is
/// no platform object, so it has no engine status of its own.
fn watch_budgets(client: &kube::Client, namespace: &str, tx: mpsc::UnboundedSender<String>) {
    use gpucloud_crd::Budget;
    let api: Api<Budget> = Api::namespaced(client.clone(), namespace);
    tokio::spawn(async move {
        let mut objects = watcher(api, watcher::Config::default())
            .applied_objects()
            .boxed();
        while let Some(next) = objects.next().await {
            let Ok(b) = next else { continue };
            let enforced = b.status.as_ref().is_some_and(|s| {
                s.observed_generation == b.metadata.generation
                    && s.conditions
                        .iter()
                        .any(|c| c.type_ == "Ready" && c.status == "True")
            });
            if enforced && tx.send(format!("Budget/{}", b.name_any())).is_err() {
                return;
            }
        }
    });
}

/// Sends KIND/NAME of every object of kind `K` seen Ready, until the receiver is gone.
fn watch_kind<K: ManagedKind>(
    client: &kube::Client,
    namespace: &str,
    tx: mpsc::UnboundedSender<String>,
) {
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    tokio::spawn(async move {
        let mut objects = watcher(api, watcher::Config::default())
            .applied_objects()
            .boxed();
        while let Some(next) = objects.next().await {
            let Ok(o) = next else { continue };
            if ready_now(&o)
                && tx
                    .send(format!("{}/{}", K::kind(&()), o.name_any()))
                    .is_err()
            {
                return;
            }
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn demo_on_the_cluster_in_kubeconfig_converges_every_example_and_cleans_up() {
    let kubeconfig = std::env::var("KUBECONFIG").expect("KUBECONFIG (scripts/test.sh sets it)");
    let client = kube_client().await;
    let namespace = format!("demo-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    // Watched from outside while the demo runs: what was seen Ready is the apiserver's
    // word, not the demo's.
    let mut ready = watch_ready(&client, &namespace);
    let child = demo(
        &[
            "--until-ready",
            "--timeout",
            "180s",
            "--namespace",
            &namespace,
        ],
        Some(&kubeconfig),
    );
    let (stdout, stderr) = succeeds(child).await;
    assert!(
        stderr.contains("using the cluster in KUBECONFIG"),
        "it says which cluster: {stderr}"
    );
    let mut seen = BTreeSet::new();
    while seen != example_objects() {
        match tokio::time::timeout(Duration::from_secs(5), ready.recv()).await {
            Ok(Some(name)) => {
                seen.insert(name);
            }
            _ => break,
        }
    }
    assert_eq!(seen, example_objects(), "not every example was seen Ready");
    assert!(
        stdout.contains(&format!("all {} objects Ready", example_objects().len())),
        "{stdout}"
    );
    // Cleaned up: the namespace is gone (the operator ran the finalizers before stopping).
    let namespaces: Api<Namespace> = Api::all(client);
    assert!(
        namespaces.get_opt(&namespace).await.unwrap().is_none(),
        "namespace {namespace} left behind:\n{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn demo_without_kubeconfig_starts_and_removes_its_own_control_plane() {
    let child = demo(&["--until-ready", "--timeout", "180s"], None);
    let pid = child.id();
    let (stdout, stderr) = succeeds(child).await;
    assert!(stderr.contains("started a local control plane"), "{stderr}");
    let rows = last_table(&stdout);
    let names: BTreeSet<String> = rows.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(names, example_objects(), "{stdout}");
    assert!(
        rows.iter().all(|(_, ready)| ready == "True"),
        "every row Ready: {stdout}"
    );
    // Nothing left running or on disk.
    let dir = std::env::temp_dir().join(format!("gpucloud-demo-{pid}"));
    assert!(!dir.exists(), "{} left behind", dir.display());
    assert!(
        stderr.contains("local control plane stopped and removed"),
        "{stderr}"
    );
}

#[test]
fn demo_refuses_a_kubeconfig_that_does_not_answer_and_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    // A port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: \"https://127.0.0.1:{port}\", insecure-skip-tls-verify: true}}}}]\nusers: [{{name: u, user: {{token: t}}}}]\ncontexts: [{{name: x, context: {{cluster: c, user: u}}}}]\ncurrent-context: x\n"
        ),
    )
    .unwrap();
    let out = demo(&["--until-ready"], Some(path.to_str().unwrap()))
        .wait_with_output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("does not answer") && stderr.contains("unset KUBECONFIG"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}
