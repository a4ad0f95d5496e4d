//! What a clean stop of an operator is, checked wherever a test stops one:
//! - it stops within the pod's grace period of SIGTERM ([`GRACE`]);
//! - it ends without an error;
//! - it leaves its Lease released (no holder of its identity);
//! - nothing panicked outside the tests' own code: the operator, the engine, the emulator,
//!   all running in the test's process, or the operator's child process.
//!
//! A failure panics, so the test fails, with what went wrong.

use std::sync::{Mutex, Once};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::{Api, Client};

/// How long a stop may take: Kubernetes' default `terminationGracePeriodSeconds`, which the
/// install keeps, after which the kubelet kills the process.
pub const GRACE: Duration = Duration::from_secs(30);

/// The Lease an operator holds and the identity it holds it under.
#[derive(Clone)]
pub struct LeaseOf {
    pub client: Client,
    pub namespace: String,
    pub name: String,
    pub identity: String,
}

impl LeaseOf {
    /// The Lease named by an operator's command-line flags (`--leader-election-namespace`,
    /// `--leader-election-lease`, `--identity`), when they name its namespace and identity.
    pub fn from_flags(client: Client, flags: &[String]) -> Option<Self> {
        let value = |name: &str| {
            flags
                .iter()
                .rev()
                .find_map(|f| f.strip_prefix(&format!("--{name}=")))
                .map(str::to_string)
        };
        Some(Self {
            client,
            namespace: value("leader-election-namespace")?,
            name: value("leader-election-lease").unwrap_or_else(|| "gpucloud-operator".into()),
            identity: value("identity")?,
        })
    }

    /// Panics when the Lease is still held under this identity. A Lease that is gone (its
    /// namespace was deleted) holds nothing.
    pub async fn assert_released(&self) {
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), &self.namespace);
        let lease =
            super::retrying("read the operator's Lease", || leases.get_opt(&self.name)).await;
        let holder = lease.and_then(|l| l.spec?.holder_identity);
        assert_ne!(
            holder.as_deref(),
            Some(self.identity.as_str()),
            "the operator stopped without releasing its Lease {}/{}: the next replica \
             would wait for it to expire",
            self.namespace,
            self.name
        );
    }
}

/// Whether a panic at source file `file` is outside the tests' own code: the workspace's
/// crates and the binary (`crates/`, `src/`) or a dependency. The tests' files are named
/// from the package root (`tests/...`).
pub fn is_foreign(file: &str) -> bool {
    !file.starts_with("tests/")
}

static FOREIGN_PANICS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Records every panic whose location is outside `tests/` (the operator's, the engine's,
/// the emulator's code, or a dependency's), still printing it as before. Called by each
/// environment's start; the first call installs the hook.
pub fn record_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let foreign = info.location().is_some_and(|at| is_foreign(at.file()));
            if foreign {
                let payload = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                let at = info.location().map(|l| l.to_string()).unwrap_or_default();
                let thread = std::thread::current().name().unwrap_or("?").to_string();
                if let Ok(mut seen) = FOREIGN_PANICS.lock() {
                    seen.push(format!("thread '{thread}' panicked at {at}: {payload}"));
                }
            }
            previous(info);
        }));
    });
}

/// Panics when code outside the tests has panicked in this test process. The record is
/// the process's: with tests running side by side, the panic may be another test's
/// operator; the message says where it happened.
pub fn assert_no_foreign_panic() {
    let seen = FOREIGN_PANICS.lock().map(|s| s.clone()).unwrap_or_default();
    assert!(
        seen.is_empty(),
        "code outside the tests panicked in this test process (an operator, the engine or \
         the emulator):\n{}",
        seen.join("\n")
    );
}

/// Panics when an operator's log shows a panic.
pub fn assert_log_has_no_panic(log: &str) {
    let panics: Vec<&str> = log.lines().filter(|l| l.contains("panicked at")).collect();
    assert!(
        panics.is_empty(),
        "the operator process panicked:\n{}",
        panics.join("\n")
    );
}
