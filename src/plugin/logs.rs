//! `kubectl gpucloud logs gpod/NAME [-f] [--system]`: a pod's platform logs from the REST
//! v2 log stream, or an endpoint's workers' (`gep/NAME`, each line prefixed with its
//! worker). `-f` follows: the stream is opened again from the last line seen, until
//! Ctrl-C, so nothing is printed twice and nothing is skipped.

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use anyhow::{Context, bail};
use futures::StreamExt;
use kube::Api;

use gpucloud_crd::{Endpoint, Pod};
use gpucloud_platform::PlatformClient;
use gpucloud_platform::v2::{LogLine, LogQuery, LogSource, V2};

use super::access::Access;
use super::target::Target;

/// How long `-f` waits before it asks for new lines again.
const FOLLOW_EVERY: Duration = Duration::from_secs(2);

/// Options of `logs`.
#[derive(Debug, clap::Args)]
pub struct LogsArgs {
    /// `gpod/NAME` or `gep/NAME`.
    pub target: String,
    /// The namespace (default: the current context's).
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// Keep printing new lines until Ctrl-C.
    #[arg(short = 'f', long)]
    pub follow: bool,
    /// The host's system log (image pulls, starts, stops) instead of the container's.
    #[arg(long)]
    pub system: bool,
    /// Past lines to print first (the platform's default is 100).
    #[arg(long)]
    pub tail: Option<u32>,
}

/// Whose logs: a pod, or the workers of an endpoint.
enum Source {
    Pod(String),
    Workers(String),
}

pub async fn run(access: &Access, args: LogsArgs) -> anyhow::Result<()> {
    let target = Target::parse(&args.target)?;
    let kube = super::access::kube_client().await?;
    let namespace = super::access::namespace_or_context(args.namespace.clone()).await;
    let source = match target.resource.kind.as_str() {
        "Pod" => {
            let pod = Api::<Pod>::namespaced(kube.clone(), &namespace)
                .get(&target.name)
                .await
                .with_context(|| format!("could not read Pod {namespace}/{}", target.name))?;
            Source::Pod(platform_id(pod.status.map(|s| s.common.id), &target)?)
        }
        "Endpoint" => {
            let endpoint = Api::<Endpoint>::namespaced(kube.clone(), &namespace)
                .get(&target.name)
                .await
                .with_context(|| format!("could not read Endpoint {namespace}/{}", target.name))?;
            Source::Workers(platform_id(endpoint.status.map(|s| s.common.id), &target)?)
        }
        other => bail!("{other} has no logs: logs are a Pod's or an Endpoint's workers'"),
    };
    let platform = super::access::platform_client(access, &kube).await?;
    let v2 = rest_v2(&platform)?;
    let query = LogQuery {
        source: Some(if args.system {
            LogSource::System
        } else {
            LogSource::Container
        }),
        tail: args.tail,
        since: None,
        last_event_id: None,
    };
    // The last line seen of each stream (the pod's, or each worker's by its id): workers
    // come and go between passes, so a position in the list would resume the wrong one.
    let mut last: HashMap<String, String> = HashMap::new();
    loop {
        match &source {
            Source::Pod(id) => {
                let q = resumed(&query, last.get(id).cloned());
                let seen = print_stream(None, v2.pod_logs(id, &q).await?).await?;
                remember(&mut last, id, seen);
            }
            Source::Workers(id) => {
                let workers = v2.endpoint_workers(id).await?.workers;
                if workers.is_empty() && !args.follow {
                    println!("Endpoint {} has no running worker.", target.name);
                }
                for worker in &workers {
                    let q = resumed(&query, last.get(&worker.id).cloned());
                    let stream = v2.worker_logs(id, &worker.id, &q).await?;
                    let seen = print_stream(Some(&worker.id), stream).await?;
                    remember(&mut last, &worker.id, seen);
                }
            }
        }
        if !args.follow {
            return Ok(());
        }
        tokio::select! {
            _ = tokio::signal::ctrl_c() => return Ok(()),
            _ = tokio::time::sleep(FOLLOW_EVERY) => {}
        }
    }
}

/// The platform id that status reports, or why there is none yet.
fn platform_id(id: Option<Option<String>>, target: &Target) -> anyhow::Result<String> {
    match id.flatten() {
        Some(id) => Ok(id),
        None => bail!(
            "{} {} has no platform id in its status yet: it is not created on the platform",
            target.resource.kind,
            target.name
        ),
    }
}

fn rest_v2(platform: &PlatformClient) -> anyhow::Result<V2> {
    if platform.api() != gpucloud_platform::PlatformApi::V2 {
        bail!(
            "logs need the REST v2 API (the seed API has no log stream): unset --platform-api=seed"
        );
    }
    Ok(platform.v2())
}

/// The query again, from after the last line seen (no backfill then: it was printed).
fn resumed(query: &LogQuery, last_event_id: Option<String>) -> LogQuery {
    match last_event_id {
        Some(id) => LogQuery {
            last_event_id: Some(id),
            tail: None,
            ..query.clone()
        },
        None => query.clone(),
    }
}

/// Keeps the last line seen of stream `whose`; a pass with no new line keeps the mark.
fn remember(last: &mut HashMap<String, String>, whose: &str, seen: Option<String>) {
    if let Some(seen) = seen {
        last.insert(whose.to_string(), seen);
    }
}

/// Prints the stream's lines; the id of the last one.
async fn print_stream(
    worker: Option<&str>,
    mut lines: gpucloud_platform::v2::LogStream,
) -> anyhow::Result<Option<String>> {
    let mut stdout = std::io::stdout();
    let mut last = None;
    while let Some(line) = lines.next().await {
        let line: LogLine = line?;
        writeln!(stdout, "{}", format_line(worker, &line))?;
        stdout.flush()?;
        last = line.id.clone().or(Some(line.ts.clone()));
    }
    Ok(last)
}

/// One printed line: time, then the worker when there are several, then the text.
pub fn format_line(worker: Option<&str>, line: &LogLine) -> String {
    match worker {
        Some(w) => format!("{} [{w}] {}", line.ts, line.line),
        None => format!("{} {}", line.ts, line.line),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resumed_query_asks_from_the_last_line_without_backfill() {
        let q = LogQuery {
            source: Some(LogSource::System),
            tail: Some(50),
            since: None,
            last_event_id: None,
        };
        let again = resumed(&q, Some("2026-01-01T00:00:01Z".into()));
        assert_eq!(again.last_event_id.as_deref(), Some("2026-01-01T00:00:01Z"));
        assert_eq!(again.tail, None);
        assert_eq!(again.source, Some(LogSource::System));
        assert_eq!(resumed(&q, None), q);
    }

    #[test]
    fn lines_of_several_workers_say_whose() {
        let line = LogLine {
            source: LogSource::Container,
            line: "ready".into(),
            ts: "2026-01-01T00:00:00Z".into(),
            id: None,
        };
        assert_eq!(format_line(None, &line), "2026-01-01T00:00:00Z ready");
        assert_eq!(
            format_line(Some("w-1"), &line),
            "2026-01-01T00:00:00Z [w-1] ready"
        );
        let mut last = HashMap::new();
        remember(&mut last, "w-2", Some("b".into()));
        remember(&mut last, "w-2", None);
        assert_eq!(
            last,
            HashMap::from([("w-2".to_string(), "b".to_string())]),
            "a quiet pass keeps the mark, and each worker has its own"
        );
    }
}
