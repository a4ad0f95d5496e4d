//! The operator binary as a child process of a test, so that it can really be killed.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use super::operator::operator_kubeconfig;
use super::shutdown::{self, LeaseOf};
use super::wait_until;

/// The operator binary running as a child process. Dropping it kills the process, so a
/// failed test leaves nothing behind; when the test is failing, the tail of the process's
/// log is printed.
pub struct OperatorProcess {
    child: Option<Child>,
    log: PathBuf,
    /// The kubeconfig it signs in with (else the process's `KUBECONFIG`) and its flags: its
    /// Lease is read with them when it stops.
    kubeconfig: Option<PathBuf>,
    flags: Vec<String>,
    /// The port of its `/metrics` when the flags chose one (`--metrics-addr=HOST:PORT`,
    /// PORT not 0).
    metrics_port: Option<u16>,
}

impl OperatorProcess {
    /// Starts `gpucloud-operator run FLAGS`, its output going to a log file.
    pub fn spawn(flags: &[String]) -> Self {
        Self::spawn_with(operator_kubeconfig().map(PathBuf::from).as_deref(), flags)
    }

    /// [`Self::spawn`] signed in with `kubeconfig` (else the process's `KUBECONFIG`).
    pub fn spawn_with(kubeconfig: Option<&Path>, flags: &[String]) -> Self {
        Self::spawn_binary(
            Path::new(env!("CARGO_BIN_EXE_gpucloud-operator")),
            kubeconfig,
            flags,
        )
    }

    /// [`Self::spawn_with`] of another build of the operator, `binary`: a release before
    /// this one, for the upgrade test.
    pub fn spawn_binary(binary: &Path, kubeconfig: Option<&Path>, flags: &[String]) -> Self {
        let log = std::env::temp_dir().join(format!(
            "gpucloud-operator-{}.log",
            uuid::Uuid::new_v4().simple()
        ));
        let out = std::fs::File::create(&log).expect("operator log file");
        let err = out.try_clone().expect("operator log file");
        let mut command = Command::new(binary);
        if let Some(path) = kubeconfig {
            command.env("KUBECONFIG", path);
        }
        let child = command
            .arg("run")
            .args(flags)
            .env(
                "RUST_LOG",
                std::env::var("OPERATOR_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .expect("start the operator binary");
        let metrics_port = flags
            .iter()
            .rev()
            .find_map(|f| f.strip_prefix("--metrics-addr="))
            .and_then(|addr| addr.rsplit(':').next()?.parse().ok())
            .filter(|port| *port != 0);
        Self {
            child: Some(child),
            log,
            kubeconfig: kubeconfig.map(Path::to_path_buf),
            flags: flags.to_vec(),
            metrics_port,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// The text of its `/metrics` now; `None` when the flags gave no port, or while it
    /// does not answer.
    pub async fn metrics(&self) -> Option<String> {
        super::http::metrics_text(self.metrics_port?).await
    }

    /// The port of its `/metrics`, when the flags chose one.
    pub fn metrics_port(&self) -> Option<u16> {
        self.metrics_port
    }

    /// The process's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Whether the process is still running.
    pub fn running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| c.try_wait().ok().flatten().is_none())
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.pid().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{signal} {} failed", self.pid());
    }

    /// Freezes the process (SIGSTOP): it holds its connections and its Lease but does
    /// nothing, like a replica stuck on a dead node.
    pub fn freeze(&self) {
        self.signal("STOP");
    }

    /// SIGKILL: the process ends at once, wherever it is, without any cleanup.
    pub fn kill(mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM, as Kubernetes stops a pod, and waits for the process to exit. The test
    /// fails unless it exits with status 0 within the pod's grace period (else it is
    /// killed), with its Lease released and no panic in its log.
    pub async fn terminate(mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if child.try_wait().ok().flatten().is_none() {
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(child.id().to_string())
                .status();
        }
        let exited = wait_until(shutdown::GRACE, || {
            let done = child.try_wait().ok().flatten().is_some();
            async move { done }
        })
        .await;
        if !exited {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the operator process did not exit within {:?} of SIGTERM",
                shutdown::GRACE
            );
        }
        let status = child.wait().expect("the operator process's exit status");
        assert!(
            status.success(),
            "the operator process exited with {status}"
        );
        shutdown::assert_log_has_no_panic(&self.log());
        if let Some(lease) = LeaseOf::from_flags(self.kube_client().await, &self.flags) {
            lease.assert_released().await;
        }
    }

    /// A client signed in as the process is.
    async fn kube_client(&self) -> kube::Client {
        match &self.kubeconfig {
            Some(path) => super::client_from_kubeconfig(path).await,
            None => super::kube_client().await,
        }
    }
}

impl Drop for OperatorProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if std::thread::panicking() {
            let log = self.log();
            let lines: Vec<&str> = log.lines().collect();
            let tail = lines[lines.len().saturating_sub(80)..].join("\n");
            eprintln!(
                "---- operator process log ({}), last lines ----\n{tail}",
                self.log.display()
            );
        } else {
            let _ = std::fs::remove_file(&self.log);
        }
    }
}
