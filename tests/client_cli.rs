//! `gpucloud-operator platform ...` run as a process against the in-process emulator. A
//! suite of the binary (`src/cli`), so it stays beside the binary: only the root package's
//! tests can run it; the platform client's own suites are in `crates/platform/tests/`.

use std::process::Output;

use gpucloud_emulator::{ApiKey, EmulatorConfig, RunningEmulator};

/// The key the commands read from a file: distinctive, so that a leak cannot hide in other
/// text.
const FULL_KEY: &str = "sk-FULL-7f3a9c1e5b2d4680aa";

/// An emulator on a free port that takes [`FULL_KEY`].
async fn start() -> RunningEmulator {
    let config = EmulatorConfig {
        api_keys: vec![ApiKey {
            key: FULL_KEY.into(),
            read_only: false,
        }],
        pod_boot_ms: 50,
        ..EmulatorConfig::default()
    };
    gpucloud_emulator::start(config, "127.0.0.1:0".parse().unwrap())
        .await
        .expect("emulator starts")
}

fn run(emu: &RunningEmulator, key_file: &std::path::Path, args: &[&str]) -> Output {
    let base = emu.base_url();
    tokio::task::block_in_place(|| {
        std::process::Command::new(env!("CARGO_BIN_EXE_gpucloud-operator"))
            .arg("platform")
            .args(args)
            .args(["--rest-url", &format!("{base}/v1")])
            .args(["--graphql-url", &format!("{base}/graphql")])
            .args(["--registry-url", &base])
            .args(["--api-key-file", key_file.to_str().unwrap()])
            // The job API base comes from the environment, as users would set it.
            .env("GPUCLOUD_SERVERLESS_URL", format!("{base}/v2"))
            // These commands are the seed surfaces' (GraphQL, REST v1); v2 is the default.
            .env("GPUCLOUD_PLATFORM_API", "seed")
            .env_remove("GPUCLOUD_API_KEY")
            .output()
            .expect("binary runs")
    })
}

fn stdout_of(out: &Output) -> String {
    assert!(
        out.status.success(),
        "failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!text.contains(FULL_KEY));
    assert!(!String::from_utf8_lossy(&out.stderr).contains(FULL_KEY));
    text
}

/// `platform job run` on the demo endpoint with `input`, and `extra` flags.
fn job_run(
    emu: &RunningEmulator,
    key_file: &std::path::Path,
    input: &str,
    extra: &[&str],
) -> String {
    let args = ["job", "run", "ep-demo0001", "--input", input];
    let args: Vec<&str> = args.into_iter().chain(extra.iter().copied()).collect();
    stdout_of(&run(emu, key_file, &args))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_subcommand_against_the_emulator() {
    let emu = start().await;
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("key");
    std::fs::write(&key, format!("{FULL_KEY}\n")).unwrap();

    let t = stdout_of(&run(&emu, &key, &["gpu-types"]));
    assert!(t.starts_with("ID"), "{t}");
    assert!(t.contains("NVIDIA A40") && t.contains("STOCK"), "{t}");
    let j = stdout_of(&run(&emu, &key, &["gpu-types", "-o", "json"]));
    let v: serde_json::Value = serde_json::from_str(&j).unwrap();
    assert!(
        v.as_array()
            .unwrap()
            .iter()
            .any(|g| g["id"] == "NVIDIA A40")
    );

    assert!(stdout_of(&run(&emu, &key, &["pods"])).starts_with("ID"));
    assert!(stdout_of(&run(&emu, &key, &["endpoints"])).contains("ep-demo0001"));
    assert!(stdout_of(&run(&emu, &key, &["volumes"])).contains("nv-demo0001"));
    assert!(stdout_of(&run(&emu, &key, &["delegations"])).contains("my-team/inference:v1.2.0"));

    let t = job_run(&emu, &key, r#"{"output": {"ok": true}}"#, &["--wait"]);
    assert!(t.contains("COMPLETED") && t.contains("\"ok\": true"), "{t}");
    let j = job_run(
        &emu,
        &key,
        r#"{"stream": ["x", "y"]}"#,
        &["--stream", "-o", "json"],
    );
    assert!(j.starts_with("\"x\"\n\"y\"\n"), "{j}");
    let t = job_run(&emu, &key, "{}", &[]);
    assert!(t.contains("IN_QUEUE"), "{t}");

    // Bad input is refused with the field named, and a readable error.
    let out = run(&emu, &key, &["job", "run", "ep-demo0001", "--input", "[1]"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("input"), "{err}");
    emu.shutdown().await;
}

/// `platform` on REST v2 (the default API), pointed at the emulator with `--api-url`.
fn run_v2(emu: &RunningEmulator, key_file: &std::path::Path, args: &[&str]) -> Output {
    let base = emu.base_url();
    tokio::task::block_in_place(|| {
        std::process::Command::new(env!("CARGO_BIN_EXE_gpucloud-operator"))
            .arg("platform")
            .args(args)
            .args(["--api-url", &format!("{base}/v2")])
            .args(["--api-key-file", key_file.to_str().unwrap()])
            .env_remove("GPUCLOUD_API_KEY")
            .env_remove("GPUCLOUD_PLATFORM_API")
            .output()
            .expect("binary runs")
    })
}

/// `run_v2` with `-o json`, the output parsed.
fn v2_json(emu: &RunningEmulator, key_file: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let args: Vec<&str> = args.iter().copied().chain(["-o", "json"]).collect();
    let out = stdout_of(&run_v2(emu, key_file, &args));
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_subcommands_against_the_emulator() {
    let emu = start().await;
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("key");
    std::fs::write(&key, format!("{FULL_KEY}\n")).unwrap();

    let t = stdout_of(&run_v2(
        &emu,
        &key,
        &["v2", "catalog", "gpus", "--available", "--product", "POD"],
    ));
    assert!(t.starts_with("ID") && t.contains("AVAILABILITY"), "{t}");
    assert!(t.contains("NVIDIA GeForce RTX 4090"), "{t}");
    // The listing commands speak v2 by default.
    let t = stdout_of(&run_v2(&emu, &key, &["gpu-types"]));
    assert!(
        t.contains("NVIDIA GeForce RTX 4090") && t.contains("POOL"),
        "{t}"
    );

    let pod = v2_json(
        &emu,
        &key,
        &[
            "v2",
            "pods",
            "create",
            "--name",
            "cli-pod",
            "--image",
            "ubuntu",
            "--gpu",
            "NVIDIA GeForce RTX 4090",
            "--env",
            "A=1",
        ],
    );
    let id = pod["id"].as_str().unwrap().to_owned();
    assert_eq!(pod["status"], "PROVISIONING");
    assert_eq!(pod["env"]["A"], "1");
    let t = stdout_of(&run_v2(&emu, &key, &["pods"]));
    assert!(t.contains(&id) && t.contains("cli-pod"), "{t}");
    let t = stdout_of(&run_v2(&emu, &key, &["v2", "pods", "get", &id]));
    assert!(t.contains("1x NVIDIA GeForce RTX 4090"), "{t}");
    let t = stdout_of(&run_v2(
        &emu,
        &key,
        &["v2", "pods", "action", &id, "terminate"],
    ));
    assert!(t.contains(&format!("{id} terminate")), "{t}");

    // A platform error is reported with its class, and the command fails.
    let out = run_v2(&emu, &key, &["v2", "pods", "get", &id]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not found"), "{err}");

    let vol = v2_json(
        &emu,
        &key,
        &[
            "v2",
            "volumes",
            "create",
            "--name",
            "cli-vol",
            "--size",
            "20",
            "--data-center",
            "EU-RO-1",
        ],
    );
    let vol_id = vol["id"].as_str().unwrap().to_owned();
    let t = stdout_of(&run_v2(
        &emu,
        &key,
        &["v2", "volumes", "update", &vol_id, "--size", "30"],
    ));
    assert!(t.contains("cli-vol") && t.contains("30"), "{t}");
    let t = stdout_of(&run_v2(&emu, &key, &["volumes"]));
    assert!(t.contains(&vol_id), "{t}");
    let t = stdout_of(&run_v2(&emu, &key, &["v2", "volumes", "delete", &vol_id]));
    assert!(t.contains("deleted"), "{t}");

    let b = v2_json(
        &emu,
        &key,
        &["v2", "billing", "pods", "--last", "2", "--bucket", "day"],
    );
    assert!(b["metadata"]["totals"]["totalAmount"].is_number(), "{b}");
    emu.shutdown().await;
}
