//! `kubectl gpucloud ssh gpod/NAME [--exec]`: the SSH command for a pod, from its SSH
//! endpoint: straight to its published `22/tcp` when it has one (status shows the address),
//! else the platform's proxy (REST v2 names it). With `--exec` the command runs in place of
//! the plugin, so the terminal is the session's.

use anyhow::{Context, bail};
use kube::Api;

use gpucloud_crd::Pod;
use gpucloud_crd::pod::PodStatus;
use gpucloud_platform::PlatformApi;

use super::access::Access;
use super::target::Target;

/// Options of `ssh`.
#[derive(Debug, clap::Args)]
pub struct SshArgs {
    /// `gpod/NAME`.
    pub target: String,
    /// The namespace (default: the current context's).
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// Run the command instead of printing it.
    #[arg(long)]
    pub exec: bool,
}

pub async fn run(access: &Access, args: SshArgs) -> anyhow::Result<()> {
    let target = Target::parse(&args.target)?;
    if target.resource.kind != "Pod" {
        bail!("ssh reaches Pods, not {}s", target.resource.kind);
    }
    let kube = super::access::kube_client().await?;
    let namespace = super::access::namespace_or_context(args.namespace.clone()).await;
    let pod = Api::<Pod>::namespaced(kube.clone(), &namespace)
        .get(&target.name)
        .await
        .with_context(|| format!("could not read Pod {namespace}/{}", target.name))?;
    let status = pod.status.unwrap_or_default();
    let command = match direct_command(&status) {
        Some(command) => command,
        None => proxy_command(access, &kube, &status, &target.name).await?,
    };
    if !args.exec {
        println!("{command}");
        return Ok(());
    }
    exec(&command)
}

/// `ssh root@IP -p PORT` when status shows the pod's `22/tcp` published.
pub fn direct_command(status: &PodStatus) -> Option<String> {
    status
        .ports
        .iter()
        .filter(|p| p.private_port == 22 && p.type_ == "tcp")
        .find_map(|p| {
            Some(format!(
                "ssh root@{} -p {}",
                p.public_ip.as_ref()?,
                p.public_port?
            ))
        })
}

/// The platform's proxy command for the pod (REST v2 only).
async fn proxy_command(
    access: &Access,
    kube: &kube::Client,
    status: &PodStatus,
    name: &str,
) -> anyhow::Result<String> {
    let Some(id) = status.common.id.as_deref() else {
        bail!("Pod {name} is not created on the platform yet: it has no SSH endpoint");
    };
    let platform = super::access::platform_client(access, kube).await?;
    if platform.api() != PlatformApi::V2 {
        bail!(
            "Pod {name} publishes no 22/tcp, and the seed API names no SSH proxy: add \"22/tcp\" to spec.ports"
        );
    }
    let remote = platform.v2().get_pod(id).await?;
    let ssh = remote.ssh.unwrap_or_default();
    match ssh.direct.or(ssh.proxy) {
        Some(endpoint) if !endpoint.command.is_empty() => Ok(endpoint.command),
        Some(e) => Ok(format!("ssh {}@{} -p {}", e.username, e.host, e.port)),
        None => bail!("the platform names no SSH endpoint for Pod {name} (is it running?)"),
    }
}

/// Replaces the plugin with `command`, as `kubectl exec` hands over the terminal.
fn exec(command: &str) -> anyhow::Result<()> {
    let words = shell_words(command);
    let Some((program, rest)) = words.split_first() else {
        bail!("empty SSH command");
    };
    let status = std::process::Command::new(program)
        .args(rest)
        .status()
        .with_context(|| format!("could not run {program}"))?;
    if !status.success() {
        bail!("{program} exited with {status}");
    }
    Ok(())
}

/// The platform's commands are plain words separated by spaces.
fn shell_words(command: &str) -> Vec<String> {
    command.split_whitespace().map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpucloud_crd::pod::PodPortStatus;

    #[test]
    fn a_published_22_is_the_direct_command() {
        let port = |private, ip: Option<&str>, public| PodPortStatus {
            private_port: private,
            public_ip: ip.map(str::to_string),
            public_port: public,
            type_: "tcp".into(),
            url: None,
        };
        let mut status = PodStatus::default();
        assert_eq!(direct_command(&status), None);
        status.ports = vec![port(8888, Some("1.2.3.4"), Some(40001))];
        assert_eq!(direct_command(&status), None, "not SSH");
        status.ports.push(port(22, None, None));
        assert_eq!(direct_command(&status), None, "not published yet");
        status.ports.push(port(22, Some("1.2.3.4"), Some(40022)));
        assert_eq!(
            direct_command(&status).as_deref(),
            Some("ssh root@1.2.3.4 -p 40022")
        );
        assert_eq!(shell_words("ssh  a@b -p 1"), ["ssh", "a@b", "-p", "1"]);
    }
}
