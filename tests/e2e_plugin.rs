//! `kubectl gpucloud` end to end: the operator's binary installed as `kubectl-gpucloud` (a
//! symlink, as a user installs it), run as a process against the real apiserver and the
//! emulator, with the key read from the operator's Secret in the cluster. Every command a
//! user types: status, explain, ssh (printed and run), logs (a Pod's, an Endpoint's
//! workers', followed), cost, orphans. The key must never show.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use gpucloud_crd::{Budget, Endpoint, Pod};
use gpucloud_platform::v2::{CreateContainerConfig, CreateGpuConfig, CreatePod};
use serde_json::json;

use common::backend::{backend, is_v2};
use common::operator::{API_KEY, Env, KEY_SECRET, ready_now, volume};
use common::pods::{RTX4090, config, id_of, is_ready, pod};

const TIMEOUT: Duration = Duration::from_secs(60);
const HOUR_MS: u64 = 3_600_000;

/// The binary as kubectl finds a plugin: `kubectl-gpucloud` on the PATH.
fn install_plugin(dir: &Path) -> PathBuf {
    let plugin = dir.join("kubectl-gpucloud");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_gpucloud-operator"), &plugin)
        .expect("symlink the plugin");
    plugin
}

/// Runs `kubectl gpucloud ARGS` as kubectl would (the plugin with the user's arguments),
/// with no key in the environment: the plugin reads the operator's Secret.
fn plugin(env: &Env, bin: &Path, path: &str, args: &[&str]) -> Output {
    let base = env.emulator.base_url();
    let out = Command::new(bin)
        .args(args)
        .arg(format!("--api-key-secret={}/{KEY_SECRET}", env.ns.name()))
        .arg(format!("--api-url={base}/v2"))
        .env("GPUCLOUD_REST_URL", format!("{base}/v1"))
        .env("GPUCLOUD_GRAPHQL_URL", format!("{base}/graphql"))
        .env("GPUCLOUD_PLATFORM_API", backend())
        .env("PATH", path)
        .env_remove("GPUCLOUD_API_KEY")
        .stdin(Stdio::null())
        .output()
        .expect("run kubectl-gpucloud");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!text.contains(API_KEY), "the API key leaked: {text}");
    out
}

fn stdout_ok(out: &Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn every_plugin_command_against_the_cluster_and_the_platform() {
    let env = Env::start_with("plugin", config()).await;
    let op = env.operator(&[]);
    let ns = env.ns.name().to_string();
    let dir = tempfile::tempdir().unwrap();
    let bin = install_plugin(dir.path());
    // A fake `ssh` first on the PATH records how `ssh --exec` calls it.
    let ssh_log = dir.path().join("ssh-args");
    let fake_ssh = dir.path().join("ssh");
    std::fs::write(
        &fake_ssh,
        format!("#!/bin/sh\necho \"$@\" > {}\n", ssh_log.display()),
    )
    .unwrap();
    std::fs::set_permissions(
        &fake_ssh,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );

    let budget: Budget = serde_json::from_value(
        json!({"metadata": {"name": "team"}, "spec": {"maxCostPerHour": 10.0}}),
    )
    .unwrap();
    env.create(&budget).await;
    env.create(&pod("train", json!({}))).await;
    // No RTX 4090 under a cent an hour anywhere: it waits, and says why.
    env.create(&pod(
        "cheap",
        json!({"gpu": {"typeIds": [RTX4090], "count": 1, "maxPricePerHour": 0.01}}),
    ))
    .await;
    env.create(&volume("data", 10, json!({}))).await;
    let train: Pod = env.wait_for("train", TIMEOUT, "Ready", is_ready).await;
    let cheap: Pod = env
        .wait_for("cheap", TIMEOUT, "a reason", |p: &Pod| {
            p.status
                .as_ref()
                .and_then(|s| s.common.conditions.iter().find(|c| c.type_ == "Ready"))
                .is_some_and(|c| c.status == "False" && !c.message.is_empty())
        })
        .await;
    let cheap_reason = cheap
        .status
        .as_ref()
        .unwrap()
        .common
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.reason.to_string())
        .unwrap();
    env.wait_for::<Budget, _>("team", TIMEOUT, "counted", |b| {
        b.status.as_ref().is_some_and(|s| s.cost_per_hour > 0.0)
    })
    .await;

    // status: the objects, the Budget's share, and what waits with why.
    let status = stdout_ok(&plugin(&env, &bin, &path, &["status", "-n", &ns]), "status");
    println!("{status}");
    assert!(status.starts_with("KIND"), "{status}");
    for wanted in [
        "train",
        "Running",
        "data",
        "cheap",
        "team",
        "of $10.00",
        "Not Ready:",
    ] {
        assert!(status.contains(wanted), "{wanted} missing: {status}");
    }
    assert!(
        status.contains(&format!("Pod {ns}/cheap: {cheap_reason}")),
        "{status}"
    );
    let all = stdout_ok(&plugin(&env, &bin, &path, &["status", "-A"]), "status -A");
    assert!(all.starts_with("NAMESPACE") && all.contains(&ns), "{all}");

    // explain: conditions and the operator's Events about the waiting Pod.
    let explain = stdout_ok(
        &plugin(&env, &bin, &path, &["explain", "gpod/cheap", "-n", &ns]),
        "explain",
    );
    println!("{explain}");
    assert!(explain.starts_with(&format!("Pod {ns}/cheap")), "{explain}");
    assert!(explain.contains(&cheap_reason), "{explain}");
    let missing = plugin(&env, &bin, &path, &["explain", "gpod/nope", "-n", &ns]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("does not exist"));

    // ssh: the command of the published 22/tcp, and --exec runs it.
    let ssh = stdout_ok(
        &plugin(&env, &bin, &path, &["ssh", "gpod/train", "-n", &ns]),
        "ssh",
    );
    let port22 = train
        .status
        .as_ref()
        .unwrap()
        .ports
        .iter()
        .find(|p| p.private_port == 22)
        .and_then(|p| p.public_port)
        .expect("22/tcp published");
    assert_eq!(
        ssh.trim_end().split(' ').next_back(),
        Some(port22.to_string().as_str()),
        "{ssh}"
    );
    stdout_ok(
        &plugin(
            &env,
            &bin,
            &path,
            &["ssh", "gpod/train", "-n", &ns, "--exec"],
        ),
        "ssh --exec",
    );
    let ran = std::fs::read_to_string(&ssh_log).expect("ssh was run");
    assert_eq!(
        format!("ssh {}", ran.trim()),
        ssh.trim(),
        "the printed command is the one run"
    );

    // orphans: nothing of this install is orphaned.
    let orphans = stdout_ok(&plugin(&env, &bin, &path, &["orphans"]), "orphans");
    assert!(orphans.contains("orphan(s)"), "{orphans}");

    if is_v2() {
        v2_commands(&env, &bin, &path, &ns, &train).await;
    } else {
        let logs = plugin(&env, &bin, &path, &["logs", "gpod/train", "-n", &ns]);
        assert!(!logs.status.success());
        assert!(String::from_utf8_lossy(&logs.stderr).contains("REST v2"));
    }
    env.finish(op).await;
}

/// The log stream and billing exist on REST v2 only.
async fn v2_commands(env: &Env, bin: &Path, path: &str, ns: &str, train: &Pod) {
    // logs: the system stream shows the pod being started; --follow keeps the stream open.
    let logs = stdout_ok(
        &plugin(
            env,
            bin,
            path,
            &["logs", "gpod/train", "-n", ns, "--system"],
        ),
        "logs",
    );
    assert!(logs.lines().count() > 0, "no system log lines: {logs}");
    let route = "GET /v2/pods/{id}/logs";
    let admin = env.emulator.admin();
    let opened = admin.call_count(route).await.unwrap();
    let mut follow = Command::new(bin)
        .args(["logs", "gpod/train", "-n", ns, "-f"])
        .arg(format!("--api-key-secret={}/{KEY_SECRET}", env.ns.name()))
        .arg(format!("--api-url={}/v2", env.emulator.base_url()))
        .env("PATH", path)
        .env_remove("GPUCLOUD_API_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Still following once it has opened the stream a second time: past the end of the
    // first, where it would stop without -f.
    let again = common::wait_until(Duration::from_secs(60), || async {
        admin.call_count(route).await.unwrap() >= opened + 2
    })
    .await;
    assert!(
        again,
        "-f did not open the stream again: {:?}",
        env.calls().await
    );
    assert!(
        follow.try_wait().unwrap().is_none(),
        "-f stopped on its own"
    );
    follow.kill().unwrap();
    let _ = follow.wait();

    // An Endpoint's workers, each line with its worker.
    let endpoint: Endpoint = serde_json::from_value(json!({
        "metadata": {"name": "infer"},
        "spec": {"templateId": "tmpl-worker-base", "gpu": {"typeIds": ["NVIDIA A40"]},
                 "workersMin": 1, "workersMax": 1},
    }))
    .unwrap();
    env.create(&endpoint).await;
    let ready: Endpoint = env.wait_for("infer", TIMEOUT, "Ready", ready_now).await;
    let id = ready.status.unwrap().common.id.unwrap();
    let v2 = env.platform.v2();
    let started = std::time::Instant::now();
    let worker = loop {
        let workers = v2.endpoint_workers(&id).await.map(|w| w.workers);
        if let Some(w) = workers.ok().and_then(|w| w.first().map(|w| w.id.clone())) {
            break w;
        }
        assert!(started.elapsed() < TIMEOUT, "no worker came up");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let worker_logs = stdout_ok(
        &plugin(env, bin, path, &["logs", "gep/infer", "-n", ns, "--system"]),
        "logs gep",
    );
    assert!(
        worker_logs.contains(&format!("[{worker}]")),
        "{worker_logs}"
    );

    // cost: an hour of billing later, the Pod's spend is its own, and a pod made outside
    // the cluster is listed apart.
    let outside = v2
        .create_pod(&CreatePod {
            name: "made-by-hand".into(),
            container: CreateContainerConfig {
                image: Some("ubuntu".into()),
                ..Default::default()
            },
            gpu: Some(CreateGpuConfig {
                id: RTX4090.into(),
                count: Some(1),
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .unwrap();
    env.emulator.admin().advance_clock(HOUR_MS).await.unwrap();
    let cost = stdout_ok(&plugin(env, bin, path, &["cost", "--since", "2d"]), "cost");
    println!("{cost}\n{worker_logs}");
    let line = cost
        .lines()
        .find(|l| l.contains(ns) && l.contains("train"))
        .unwrap_or_else(|| panic!("no line for the Pod: {cost}"));
    let billed: f64 = line
        .rsplit('$')
        .next()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no amount: {line}"));
    assert!(billed > 0.1, "an hour of an RTX 4090 was billed: {line}");
    assert!(cost.contains(&outside.id), "spend of no object: {cost}");
    assert!(
        !cost.contains(&id_of(train)),
        "a matched pod is named, not its id: {cost}"
    );
    let own = stdout_ok(&plugin(env, bin, path, &["cost", "-n", ns]), "cost -n");
    assert!(!own.contains(&outside.id), "{own}");
}
