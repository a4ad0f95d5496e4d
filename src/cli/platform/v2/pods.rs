//! `platform v2 pods ...`: the pod calls, the create body the flags describe, and the log
//! stream.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::{Context, bail};
use futures::StreamExt;

use super::args::{PodCommand, PodCreateArgs};
use super::body::read_body;
use crate::cli::platform::output::{OutputFormat, Printer};
use gpucloud_platform::v2::{
    Cloud, CreateContainerConfig, CreateCpuConfig, CreateGpuConfig, CreatePod, LogQuery, LogSource,
    Mounts, NetworkMount, PodAction, PodListQuery, UpdateContainerConfig, UpdatePod, V2,
};

pub(super) async fn run(v2: &V2, out: Printer, command: PodCommand) -> anyhow::Result<()> {
    match command {
        PodCommand::List {
            include_cluster_pods,
        } => {
            let filter = PodListQuery {
                include_cluster_pods: include_cluster_pods.then_some(true),
            };
            out.rows(&v2.list_pods(&filter).await?)
        }
        PodCommand::Get { id } => out.row(&v2.get_pod(&id).await?),
        PodCommand::Create(args) => {
            let body = pod_create_body(*args)?;
            out.row(&v2.create_pod(&body).await?)
        }
        PodCommand::Update(args) => {
            let body = match args.body {
                Some(raw) => read_body(&raw)?,
                None => UpdatePod {
                    name: args.name,
                    container: UpdateContainerConfig {
                        image: args.image,
                        ..UpdateContainerConfig::default()
                    },
                    locked: args.locked,
                    ..UpdatePod::default()
                },
            };
            out.row(&v2.update_pod(&args.id, &body).await?)
        }
        PodCommand::Delete { id } => {
            v2.delete_pod(&id).await?;
            out.deleted(&id)
        }
        PodCommand::Action { id, action } => {
            let action: PodAction = action.parse().unwrap_or_else(|e| match e {});
            match v2.pod_action(&id, action.clone()).await? {
                Some(pod) => out.row(&pod),
                None => out.done(&id, action.as_str()),
            }
        }
        PodCommand::Logs {
            id,
            source,
            tail,
            since,
        } => {
            let q = LogQuery {
                source: source.map(|s| s.parse::<LogSource>().unwrap_or_else(|e| match e {})),
                tail,
                since,
                last_event_id: None,
            };
            let mut lines = v2.pod_logs(&id, &q).await?;
            let mut stdout = std::io::stdout();
            while let Some(line) = lines.next().await {
                let line = line?;
                match out.format {
                    OutputFormat::Json => writeln!(stdout, "{}", serde_json::to_string(&line)?)?,
                    OutputFormat::Table => {
                        writeln!(stdout, "{} [{}] {}", line.ts, line.source, line.line)?
                    }
                }
                stdout.flush()?;
            }
            Ok(())
        }
    }
}

/// The create body the flags describe.
fn pod_create_body(a: PodCreateArgs) -> anyhow::Result<CreatePod> {
    if let Some(raw) = a.body {
        return read_body(&raw);
    }
    if a.gpu.is_none() && a.cpu.is_none() && a.template.is_none() {
        bail!("give --gpu or --cpu (or --template, or a whole --body)");
    }
    let network: Vec<NetworkMount> = a
        .network_volumes
        .iter()
        .map(|v| {
            let (volume_id, path) = v
                .split_once(':')
                .with_context(|| format!("--network-volume {v:?} is not VOLUME_ID:PATH"))?;
            Ok(NetworkMount {
                volume_id: volume_id.to_owned(),
                path: path.to_owned(),
            })
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(CreatePod {
        name: a.name.unwrap_or_default(),
        container: CreateContainerConfig {
            image: a.image,
            disk: a.disk,
            env: (!a.env.is_empty()).then(|| parse_env(&a.env)).transpose()?,
            ports: (!a.ports.is_empty()).then_some(a.ports),
            ..CreateContainerConfig::default()
        },
        gpu: a.gpu.map(|id| CreateGpuConfig {
            id,
            count: a.gpu_count,
            ..CreateGpuConfig::default()
        }),
        cpu: a.cpu.map(|id| CreateCpuConfig {
            id,
            vcpu_count: a.vcpus.unwrap_or(2),
        }),
        cloud: a
            .cloud
            .map(|c| c.parse::<Cloud>().unwrap_or_else(|e| match e {})),
        data_center_ids: (!a.data_centers.is_empty()).then_some(a.data_centers),
        mounts: (!network.is_empty()).then(|| Mounts {
            network: Some(network),
            ..Mounts::default()
        }),
        template_id: a.template,
        ..CreatePod::default()
    })
}

fn parse_env(pairs: &[String]) -> anyhow::Result<BTreeMap<String, String>> {
    pairs
        .iter()
        .map(|p| {
            let (k, v) = p
                .split_once('=')
                .with_context(|| format!("--env {p:?} is not KEY=VALUE"))?;
            Ok((k.to_owned(), v.to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_flags_make_the_body() {
        let args = PodCreateArgs {
            body: None,
            name: Some("p".into()),
            image: Some("img".into()),
            gpu: Some("NVIDIA A40".into()),
            gpu_count: Some(2),
            cpu: None,
            vcpus: None,
            cloud: Some("community".into()),
            disk: Some(20),
            env: vec!["A=1".into(), "B=x=y".into()],
            ports: vec!["8888/http".into()],
            data_centers: vec![],
            network_volumes: vec!["vol_1:/data".into()],
            template: None,
        };
        let body = serde_json::to_value(pod_create_body(args).unwrap()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({
                "name": "p", "image": "img", "disk": 20,
                "env": {"A": "1", "B": "x=y"}, "ports": ["8888/http"],
                "cloud": "COMMUNITY", "gpu": {"id": "NVIDIA A40", "count": 2},
                "mounts": {"network": [{"volumeId": "vol_1", "path": "/data"}]}
            })
        );
    }

    #[test]
    fn bad_pod_flags_are_named() {
        let base = || PodCreateArgs {
            body: None,
            name: Some("p".into()),
            image: None,
            gpu: None,
            cpu: None,
            vcpus: None,
            gpu_count: None,
            cloud: None,
            disk: None,
            env: vec![],
            ports: vec![],
            data_centers: vec![],
            network_volumes: vec![],
            template: None,
        };
        let e = pod_create_body(base()).unwrap_err();
        assert!(e.to_string().contains("--gpu"), "{e}");
        let mut a = base();
        a.gpu = Some("g".into());
        a.env = vec!["novalue".into()];
        assert!(
            pod_create_body(a)
                .unwrap_err()
                .to_string()
                .contains("--env")
        );
        let mut a = base();
        a.gpu = Some("g".into());
        a.network_volumes = vec!["nopath".into()];
        assert!(
            pod_create_body(a)
                .unwrap_err()
                .to_string()
                .contains("--network-volume")
        );
    }
}
