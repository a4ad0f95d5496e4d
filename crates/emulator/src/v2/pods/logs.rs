//! A pod's log history and its stream (`GET /v2/pods/{id}/logs`): the system and container
//! lines the emulated life of the pod produces.

use super::*;
use crate::start_failure::{REPEAT_MS, StartFailure};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogSource {
    Container,
    System,
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct LogsQuery {
    #[serde(default)]
    source: Option<LogSource>,
    #[serde(default)]
    tail: Option<u32>,
    #[serde(default)]
    since: Option<String>,
}

/// One log line of a pod's history.
#[derive(Debug, Clone, PartialEq)]
pub struct LogLine {
    pub at: Millis,
    pub source: LogSource,
    pub line: String,
}

/// Most lines a pod's history yields (the document's `tail` maximum).
pub(super) const MAX_LOG_LINES: usize = 5000;

/// A plausible history of a pod up to `now`: the system's provisioning steps, the
/// container's start, then a heartbeat line every emulated minute of uptime.
pub fn pod_history(p: &Pod, now: Millis, boot_ms: u64) -> Vec<LogLine> {
    let mut lines = vec![
        LogLine {
            at: p.created_at,
            source: LogSource::System,
            line: format!("pod {} scheduled on machine {}", p.id, p.machine_id),
        },
        LogLine {
            at: p.created_at,
            source: LogSource::System,
            line: format!("pulling image {}", p.image_name),
        },
    ];
    if let Some(started) = p.started_at {
        if !p.first_start() {
            lines.push(LogLine {
                at: started,
                source: LogSource::System,
                line: "starting container".into(),
            });
        }
        let booted = started + boot_ms;
        if let Some(failure) = p.start_failure {
            lines.extend(failure_lines(p, failure, started + boot_ms / 2, now));
        } else if booted <= now {
            if p.first_start() {
                lines.push(LogLine {
                    at: started + boot_ms / 2,
                    source: LogSource::System,
                    line: format!("image {} pulled", p.image_name),
                });
            }
            lines.push(LogLine {
                at: booted,
                source: LogSource::System,
                line: "container started".into(),
            });
            lines.push(LogLine {
                at: booted,
                source: LogSource::Container,
                line: format!("{} ready", p.image_name),
            });
            let minutes = ((now - booted) / 60_000) as usize;
            let first = minutes.saturating_sub(MAX_LOG_LINES);
            for m in first..minutes {
                let at = booted + (m as u64 + 1) * 60_000;
                lines.push(LogLine {
                    at,
                    source: LogSource::Container,
                    line: format!("heartbeat: up {} min", m + 1),
                });
            }
        }
    } else {
        lines.push(LogLine {
            at: p.last_status_change_at,
            source: LogSource::System,
            line: "container stopped".into(),
        });
    }
    lines.sort_by_key(|l| l.at);
    lines
}

/// A failing start's line, once per attempt: the first where the pull would have finished,
/// then every [`REPEAT_MS`] up to `now` (the last [`MAX_LOG_LINES`] of them).
fn failure_lines(
    p: &Pod,
    failure: StartFailure,
    first: Millis,
    now: Millis,
) -> impl Iterator<Item = LogLine> {
    let line = failure.log_line(&p.image_name, p.cuda_version.as_deref());
    let attempts = if now >= first {
        (now - first) / REPEAT_MS + 1
    } else {
        0
    };
    let skip = attempts.saturating_sub(MAX_LOG_LINES as u64);
    (skip..attempts).map(move |k| LogLine {
        at: first + k * REPEAT_MS,
        source: LogSource::System,
        line: line.clone(),
    })
}

pub(super) fn parse_time(app: &App, field: &str, value: &str) -> V2Result<Millis> {
    let t: jiff::Timestamp = value.parse().map_err(|_| {
        Problem::unprocessable(vec![format!(
            "{field}: must be an RFC 3339 date-time (got {value:?})"
        )])
    })?;
    Ok(app.clock.emulated_at(t).max(0) as Millis)
}

pub(super) async fn logs(
    State(app): State<App>,
    _caller: Caller,
    Path(id): Path<String>,
    V2Query(q): V2Query<LogsQuery>,
    headers: HeaderMap,
) -> V2Result<Response> {
    if q.tail.is_some_and(|t| t as usize > MAX_LOG_LINES) {
        return Err(Problem::unprocessable(vec![format!(
            "tail: must be at most {MAX_LOG_LINES}"
        )]));
    }
    let last_event = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(|v| parse_time(&app, "Last-Event-ID", v))
        .transpose()?;
    let since = q
        .since
        .as_deref()
        .map(|s| parse_time(&app, "since", s))
        .transpose()?;
    let now = app.clock.now();
    let history = {
        let world = app.world.lock();
        let pod = world.cloud.pod(&id).ok_or_else(|| pod_not_found(&id))?;
        pod_history(pod, now, app.config.pod_boot_ms)
    };
    let chosen: Vec<&LogLine> = history
        .iter()
        .filter(|l| q.source.is_none_or(|s| s == l.source))
        .collect();
    let chosen: Vec<&LogLine> = match (last_event, since) {
        (Some(after), _) => chosen.into_iter().filter(|l| l.at > after).collect(),
        (None, Some(from)) => chosen.into_iter().filter(|l| l.at >= from).collect(),
        (None, None) => {
            let tail = q.tail.unwrap_or(100) as usize;
            let skip = chosen.len().saturating_sub(tail);
            chosen.into_iter().skip(skip).collect()
        }
    };
    let out: String = chosen.iter().map(|l| frame(&app, l)).collect();
    if !still_coming_up(&app, &id, now) {
        return Ok(event_stream::answer(out));
    }
    let read = Read {
        at: now,
        sent_at: chosen.iter().filter(|l| l.at == now).count(),
    };
    Ok(event_stream::answer_live(follow_start(
        app, id, q.source, read, out,
    )))
}

/// How often an open stream looks for new lines, in real time: well under the failure
/// line's cadence at any clock speed tests use.
const FOLLOW_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// Whether `p` is on its way up at `now`: meant to run, and booting or in a start that
/// keeps failing. Its stream then stays open, since the platform writes the start's lines
/// to it as they come (a stream of a pod that settled answers what there is and ends,
/// which is what the clients that collect a stream rely on).
fn coming_up(p: &Pod, now: Millis, boot_ms: u64) -> bool {
    p.desired == DesiredStatus::Running
        && (p.start_failure.is_some() || p.started_at.is_none_or(|s| s + boot_ms > now))
}

fn still_coming_up(app: &App, id: &str, now: Millis) -> bool {
    app.world
        .lock()
        .cloud
        .pod(id)
        .is_some_and(|p| coming_up(p, now, app.config.pod_boot_ms))
}

/// How far a stream has read: up to the instant `at`, of whose lines `sent_at` were sent
/// (a clock that stands still writes several lines at one instant).
#[derive(Clone, Copy)]
struct Read {
    at: Millis,
    sent_at: usize,
}

/// The backfill, then every new line of the pod as the emulator's clock reaches it, until
/// the pod is up (its container started) or stops coming up (stopped, terminated).
fn follow_start(
    app: App,
    id: String,
    source: Option<LogSource>,
    read: Read,
    backfill: String,
) -> impl futures::Stream<Item = String> + Send + 'static {
    let first = futures::stream::once(async move { backfill });
    // State: the instant read up to, and whether the pod is still coming up (the lines
    // of the pass that saw it come up are sent, then the stream ends).
    let rest = futures::stream::unfold((read, true), move |(mut read, live)| {
        let (app, id) = (app.clone(), id.clone());
        async move {
            if !live {
                return None;
            }
            loop {
                tokio::time::sleep(FOLLOW_POLL).await;
                let now = app.clock.now();
                let (history, live) = {
                    let world = app.world.lock();
                    let pod = world.cloud.pod(&id)?;
                    let boot = app.config.pod_boot_ms;
                    (pod_history(pod, now, boot), coming_up(pod, now, boot))
                };
                let mine: Vec<&LogLine> = history
                    .iter()
                    .filter(|l| l.at >= read.at && l.at <= now)
                    .filter(|l| source.is_none_or(|s| s == l.source))
                    .collect();
                let skip = mine
                    .iter()
                    .filter(|l| l.at == read.at)
                    .count()
                    .min(read.sent_at);
                let fresh: String = mine
                    .iter()
                    .filter(|l| l.at == read.at)
                    .skip(skip)
                    .chain(mine.iter().filter(|l| l.at > read.at))
                    .map(|l| frame(&app, l))
                    .collect();
                let next = Read {
                    at: now,
                    sent_at: mine.iter().filter(|l| l.at == now).count(),
                };
                if !fresh.is_empty() || !live {
                    return Some((fresh, (next, live)));
                }
                read = next;
            }
        }
    });
    futures::StreamExt::chain(first, rest)
}

/// One line as an event: its instant as the id, `{source, line, ts}` as the data.
fn frame(app: &App, l: &LogLine) -> String {
    let ts = crate::clock::rfc3339_millis(app.clock.wall_at(l.at));
    let source = match l.source {
        LogSource::Container => "container",
        LogSource::System => "system",
    };
    let data = json!({"source": source, "line": l.line, "ts": ts});
    format!("id: {ts}\ndata: {data}\n\n")
}
