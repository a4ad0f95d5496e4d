//! Shared set-up of the client tests: an emulator on a free port, a client pointed at it,
//! and a capture of every log line of the process (client, emulator, reqwest, hyper) so
//! tests can assert that no API key was ever written.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use gpucloud_emulator::{self as emulator, EmulatorConfig, RunningEmulator};
use gpucloud_platform::{
    ApiKey, BaseUrls, PlatformClient, PlatformConfig, PlatformError, RetryConfig,
};

/// Keys of the emulated account: distinctive so that a leak cannot hide in other text.
pub const FULL_KEY: &str = "sk-FULL-7f3a9c1e5b2d4680aa";
pub const READ_ONLY_KEY: &str = "sk-RO-11c0ffee22d00d33ee";
pub const NO_REGISTRY_KEY: &str = "sk-NOREG-5e5e5e5e9a9a9a9a";
pub const WRONG_KEY: &str = "sk-WRONG-0000deadbeef4242";
pub const ALL_KEYS: &[&str] = &[FULL_KEY, READ_ONLY_KEY, NO_REGISTRY_KEY, WRONG_KEY];

pub use gpucloud_platform::log_capture::captured;

/// Installs the process-wide log capture at TRACE for every target (once).
pub fn capture_logs() {
    gpucloud_platform::log_capture::capture_logs_with("trace");
}

/// Fails if any key of the suite appears in the logs so far. Every test ends with it, so
/// the last one to finish has checked the whole suite's output.
pub fn assert_no_key_logged() {
    let logs = captured();
    assert!(!logs.is_empty(), "the log capture is not working");
    for key in ALL_KEYS {
        assert!(!logs.contains(key), "an API key appeared in the logs");
    }
}

/// Logs an error the way an operator would, so the capture also covers error texts.
pub fn log_error(e: &PlatformError) {
    tracing::warn!(error = %e, debug = ?e, class = ?e.class(), "platform error seen by test");
    for key in ALL_KEYS {
        assert!(!e.to_string().contains(key) && !format!("{e:?}").contains(key));
    }
}

pub fn emulator_config() -> EmulatorConfig {
    EmulatorConfig {
        api_keys: vec![
            emulator::ApiKey {
                key: FULL_KEY.into(),
                read_only: false,
            },
            emulator::ApiKey {
                key: READ_ONLY_KEY.into(),
                read_only: true,
            },
            emulator::ApiKey {
                key: NO_REGISTRY_KEY.into(),
                read_only: false,
            },
        ],
        registry_forbidden_keys: vec![NO_REGISTRY_KEY.into()],
        pod_boot_ms: 50,
        ..EmulatorConfig::default()
    }
}

pub struct Env {
    pub emu: RunningEmulator,
    pub client: PlatformClient,
}

impl Env {
    pub fn admin(&self) -> emulator::AdminClient {
        self.emu.admin()
    }

    pub async fn shutdown(self) {
        self.emu.shutdown().await;
    }
}

/// Quick retries so fault tests run in milliseconds; the rest of the defaults.
pub fn fast_retry() -> RetryConfig {
    RetryConfig {
        max_retries: 5,
        min_delay: Duration::from_millis(20),
        max_delay: Duration::from_millis(200),
        max_retry_after: Duration::from_secs(5),
    }
}

pub fn client_config(emu: &RunningEmulator, key: &str) -> PlatformConfig {
    config_at(&emu.base_url(), key)
}

/// The configuration for the server at `base` with `key` and fast retries.
pub fn config_at(base: &str, key: &str) -> PlatformConfig {
    let urls = BaseUrls::single_host(base).expect("server URL");
    let mut cfg = PlatformConfig::new(urls, ApiKey::new(key).unwrap());
    cfg.retry = fast_retry();
    cfg
}

/// A client of the server at `base` with the full key and fast retries, after `tweak`.
pub fn client_at(base: &str, tweak: impl FnOnce(&mut PlatformConfig)) -> PlatformClient {
    let mut cfg = config_at(base, FULL_KEY);
    tweak(&mut cfg);
    PlatformClient::new(cfg).unwrap()
}

pub async fn start_with(config: EmulatorConfig, tweak: impl FnOnce(&mut PlatformConfig)) -> Env {
    capture_logs();
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let emu = emulator::start(config, addr)
        .await
        .expect("emulator starts");
    let mut cfg = client_config(&emu, FULL_KEY);
    tweak(&mut cfg);
    let client = PlatformClient::new(cfg).expect("client builds");
    Env { emu, client }
}

pub async fn start() -> Env {
    start_with(emulator_config(), |_| {}).await
}

/// The error `r` must be, of `class`: logged (so the no-key-in-logs checks see it) and
/// returned for more checks.
pub fn expect_class<T: std::fmt::Debug>(
    r: Result<T, PlatformError>,
    class: gpucloud_platform::ErrorClass,
) -> PlatformError {
    match r {
        Ok(v) => panic!("expected {class:?}, got Ok({v:?})"),
        Err(e) => {
            log_error(&e);
            assert_eq!(e.class(), class, "{e}");
            e
        }
    }
}

/// A GraphQL deploy of one GPU of `gpu`, as the seed surface takes it.
pub fn deploy_input(name: &str, gpu: &str) -> gpucloud_platform::DeployPodInput {
    gpucloud_platform::DeployPodInput {
        cloud_type: Some(gpucloud_platform::CloudType::All),
        gpu_count: Some(1),
        volume_in_gb: Some(20),
        container_disk_in_gb: Some(10),
        gpu_type_id: Some(gpu.into()),
        name: Some(name.into()),
        image_name: Some("runpod/pytorch:2.4.0".into()),
        ports: Some("8888/http,22/tcp".into()),
        volume_mount_path: Some("/workspace".into()),
        env: Some(vec![gpucloud_platform::EnvVar {
            key: "MODE".into(),
            value: "test".into(),
        }]),
        ..Default::default()
    }
}
