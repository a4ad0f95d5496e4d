//! A control plane of a suite's own, `tests/control-plane/cp.sh up --dir <tmp>` (the same
//! pinned binaries the shared one runs, cached; a few seconds), for a suite that must do
//! what would disturb every other suite on the shared one: delete the CRDs, stop the
//! apiserver or etcd. Stopped, and its folder removed, when dropped.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use kube::Client;

pub struct OwnControlPlane {
    script: PathBuf,
    dir: PathBuf,
    pub kubeconfig: PathBuf,
}

impl OwnControlPlane {
    /// Starts one, `name` in its folder's name.
    pub fn up(name: &str) -> Self {
        Self::up_with(name, &[])
    }

    /// Starts one whose kube-apiserver also gets `apiserver_args`.
    pub fn up_with(name: &str, apiserver_args: &[&str]) -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/control-plane/cp.sh");
        let suffix = uuid::Uuid::new_v4().simple().to_string();
        let dir = std::env::temp_dir().join(format!("gpucloud-{name}-{}", &suffix[..8]));
        // One start at a time, across every test process of the machine: an apiserver's
        // start is seconds of CPU, and the lanes run suites like this one side by side
        // with the shared control plane they load.
        let lock = std::env::temp_dir().join("gpucloud-own-control-plane.lock");
        let mut command = Command::new("flock");
        command.arg(&lock).arg(&script);
        command.arg("up").arg("--dir").arg(&dir);
        for arg in apiserver_args {
            command.arg(format!("--apiserver-arg={arg}"));
        }
        let out = command.output().expect("run tests/control-plane/cp.sh up");
        // Built before `up` fails, so that a half-started one is stopped too.
        let mut own = Self {
            script,
            dir,
            kubeconfig: PathBuf::new(),
        };
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "cp.sh up: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        own.kubeconfig = stdout
            .lines()
            .find_map(|l| l.strip_prefix("export KUBECONFIG="))
            .map(PathBuf::from)
            .unwrap_or_else(|| panic!("cp.sh up printed no KUBECONFIG: {stdout}"));
        own
    }

    /// A client of its admin.
    pub async fn client(&self) -> Client {
        super::client_from_kubeconfig(&self.kubeconfig).await
    }

    /// Stops `component` (`kube-apiserver`, `etcd`) as an upgrade would (SIGTERM), and
    /// waits until it has exited. How long that took.
    pub fn stop(&self, component: &str) -> Duration {
        self.run(&["stop", component])
    }

    /// Starts `component` again with the same command line, and waits until it is ready
    /// (the apiserver's `/readyz`). How long that took.
    pub fn start(&self, component: &str) -> Duration {
        self.run(&["start", component])
    }

    fn run(&self, args: &[&str]) -> Duration {
        let began = Instant::now();
        let out = Command::new(&self.script)
            .args(args)
            .arg("--dir")
            .arg(&self.dir)
            .output()
            .expect("run tests/control-plane/cp.sh");
        assert!(
            out.status.success(),
            "cp.sh {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        began.elapsed()
    }
}

impl Drop for OwnControlPlane {
    fn drop(&mut self) {
        let _ = Command::new(&self.script)
            .arg("down")
            .arg("--dir")
            .arg(&self.dir)
            .output();
    }
}
