//! The cluster the demo runs on: the one in `KUBECONFIG` when it is set, otherwise the
//! project's local control plane (`tests/control-plane/cp.sh`), started for the demo and
//! stopped after it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context as _, bail};
use kube::config::{KubeConfigOptions, Kubeconfig};

/// Where the demo's cluster came from, and how to let it go.
pub enum Cluster {
    /// The user's cluster (`KUBECONFIG`); left as it was found, but for the demo namespace.
    Given { kubeconfig: String },
    /// A control plane this demo started; stopped and removed at the end.
    Local { script: PathBuf, dir: PathBuf },
}

impl Cluster {
    /// One line for the user: which cluster this is.
    pub fn describe(&self) -> String {
        match self {
            Cluster::Given { kubeconfig } => {
                format!("using the cluster in KUBECONFIG ({kubeconfig})")
            }
            Cluster::Local { dir, .. } => format!(
                "started a local control plane; to look around: export KUBECONFIG={}",
                dir.join("kubeconfig").display()
            ),
        }
    }

    pub fn is_local(&self) -> bool {
        matches!(self, Cluster::Local { .. })
    }

    /// Stops what the demo started; a given cluster is left alone.
    pub fn release(&self) {
        if let Cluster::Local { script, dir } = self {
            let _ = Command::new("bash")
                .arg(script)
                .arg("down")
                .arg("--dir")
                .arg(dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// The control-plane script: the flag's path, else the repository this binary was built
/// from, else `tests/control-plane/cp.sh` under the working directory.
pub fn find_script(flag: Option<&Path>) -> Option<PathBuf> {
    let candidates = [
        flag.map(Path::to_path_buf),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/control-plane/cp.sh")),
        Some(PathBuf::from("tests/control-plane/cp.sh")),
    ];
    candidates.into_iter().flatten().find(|p| p.is_file())
}

/// Whether a program is on PATH.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// The cluster to use, and a client for it. With `KUBECONFIG` set, that cluster must answer;
/// without it, the local control plane is built (once, cached) and started.
pub async fn acquire(script_flag: Option<&Path>) -> anyhow::Result<(Cluster, kube::Client)> {
    if let Some(path) = std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
        let shown = path.to_string_lossy().into_owned();
        let client = kube::Client::try_default().await.with_context(|| {
            format!("KUBECONFIG is set ({shown}) but cannot be used; fix it, or unset KUBECONFIG so that the demo starts a local control plane")
        })?;
        reachable(&client).await.with_context(|| {
            format!("the cluster in KUBECONFIG ({shown}) does not answer; start it, or unset KUBECONFIG so that the demo starts a local control plane")
        })?;
        return Ok((Cluster::Given { kubeconfig: shown }, client));
    }

    let Some(script) = find_script(script_flag) else {
        bail!(
            "KUBECONFIG is not set and the local control plane script (tests/control-plane/cp.sh) \
             is not here; run the demo from a clone of the repository (`cargo run -- demo`), \
             pass --control-plane-script, or set KUBECONFIG to a cluster"
        );
    };
    for tool in ["go", "openssl", "python3", "curl"] {
        if !on_path(tool) {
            bail!(
                "the local control plane needs `{tool}` on PATH (it builds kube-apiserver and \
                 etcd from Go modules, once); install it, or set KUBECONFIG to a cluster"
            );
        }
    }
    let dir = std::env::temp_dir().join(format!("gpucloud-demo-{}", std::process::id()));
    eprintln!(
        "demo: no KUBECONFIG, starting a local control plane with {} (the first run builds it \
         from Go modules, about 15 minutes on 2 cores; later runs start in seconds)",
        script.display()
    );
    // The script's progress goes to our stderr; its stdout is the `export` line.
    let status = Command::new("bash")
        .arg(&script)
        .arg("up")
        .arg("--dir")
        .arg(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .status()
        .with_context(|| format!("could not run {}", script.display()))?;
    let cluster = Cluster::Local {
        script: script.clone(),
        dir: dir.clone(),
    };
    if !status.success() {
        cluster.release();
        bail!(
            "the local control plane did not start ({}, {status}); its output is above",
            script.display()
        );
    }
    let client = match local_client(&dir.join("kubeconfig")).await {
        Ok(client) => client,
        Err(e) => {
            cluster.release();
            return Err(e);
        }
    };
    Ok((cluster, client))
}

async fn local_client(kubeconfig: &Path) -> anyhow::Result<kube::Client> {
    let config = Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("reading {}", kubeconfig.display()))?;
    let config = kube::Config::from_custom_kubeconfig(config, &KubeConfigOptions::default())
        .await
        .context("the local control plane's kubeconfig")?;
    let client = kube::Client::try_from(config)?;
    reachable(&client)
        .await
        .context("the local control plane does not answer")?;
    Ok(client)
}

async fn reachable(client: &kube::Client) -> anyhow::Result<()> {
    tokio::time::timeout(
        std::time::Duration::from_secs(15),
        client.apiserver_version(),
    )
    .await
    .context("no answer in 15 s")??;
    Ok(())
}
