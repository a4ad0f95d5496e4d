//! `GET /v2/serverless/{id}/workers/{workerId}/logs`: a worker's log as Server-Sent Events.
//!
//! The emulator's workers write their lifecycle at their start: where they were placed, the
//! image pull and container start (source `system`), and the handler coming up (source
//! `container`). Each event has the id `TS/SEQ` (`ts` to the second, a per-worker sequence
//! number) and the data `{ts, source, line}`. The answer holds the lines the query selects
//! and then ends; an EventSource reconnects with `Last-Event-ID` and gets what came after.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::clock::{Clock, rfc3339_secs};
use crate::start_failure::REPEAT_MS;
use crate::v2::problem::{Problem, V2Result};
use crate::v2::request::Violations;

/// Lines sent when neither `since` nor `Last-Event-ID` is given and `tail` is absent.
pub const DEFAULT_TAIL: i64 = 100;
pub const MAX_TAIL: i64 = 5000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogSource {
    Container,
    System,
}

/// The query of the logs route.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct LogQuery {
    #[serde(default)]
    pub source: Option<LogSource>,
    #[serde(default)]
    pub tail: Option<i64>,
    #[serde(default)]
    pub since: Option<String>,
}

/// One log line of a worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub ts: Timestamp,
    pub seq: u64,
    pub source: LogSource,
    pub line: String,
}

#[derive(Serialize)]
struct LogEvent<'a> {
    ts: String,
    source: LogSource,
    line: &'a str,
}

/// Where a stream resumes: after an event (`TS/SEQ`) or from an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cursor {
    After { ts: i64, seq: u64 },
    From { ts: i64 },
}

fn parse_ts(s: &str) -> Option<i64> {
    s.trim().parse::<Timestamp>().ok().map(|t| t.as_second())
}

impl Cursor {
    /// `Last-Event-ID`: an event id `TS/SEQ` or a bare timestamp.
    pub fn from_event_id(id: &str) -> Option<Self> {
        match id.split_once('/') {
            Some((ts, seq)) => Some(Self::After {
                ts: parse_ts(ts)?,
                seq: seq.trim().parse().ok()?,
            }),
            None => parse_ts(id).map(|ts| Self::From { ts }),
        }
    }

    fn admits(&self, l: &LogLine) -> bool {
        let ts = l.ts.as_second();
        match *self {
            Self::After { ts: t, seq } => (ts, l.seq) > (t, seq),
            Self::From { ts: t } => ts >= t,
        }
    }
}

/// The query and `Last-Event-ID` as a selection (422 for a malformed one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    pub source: Option<LogSource>,
    pub cursor: Option<Cursor>,
    pub tail: usize,
}

pub fn selection(q: &LogQuery, last_event_id: Option<&str>) -> V2Result<Selection> {
    let mut v = Violations::new();
    v.range(q.tail, "tail", Some(0), Some(MAX_TAIL));
    let since = q.since.as_deref().map(|s| (s, parse_ts(s)));
    if let Some((_, None)) = since {
        v.fail("since", "must be an RFC 3339 timestamp");
    }
    let resume = last_event_id.map(|id| (id, Cursor::from_event_id(id)));
    if let Some((_, None)) = resume {
        v.fail(
            "Last-Event-ID",
            "must be an event id (TS/SEQ) or an RFC 3339 timestamp",
        );
    }
    v.finish()?;
    // Last-Event-ID wins over since, which wins over tail.
    let cursor = resume
        .and_then(|(_, c)| c)
        .or_else(|| since.and_then(|(_, t)| t).map(|ts| Cursor::From { ts }));
    Ok(Selection {
        source: q.source,
        cursor,
        tail: q.tail.unwrap_or(DEFAULT_TAIL).clamp(0, MAX_TAIL) as usize,
    })
}

/// The lines a selection takes, oldest first.
pub fn select<'a>(lines: &'a [LogLine], s: &Selection) -> Vec<&'a LogLine> {
    let matching: Vec<&LogLine> = lines
        .iter()
        .filter(|l| s.source.is_none_or(|src| l.source == src))
        .collect();
    match &s.cursor {
        Some(c) => matching.into_iter().filter(|l| c.admits(l)).collect(),
        None => {
            let skip = matching.len().saturating_sub(s.tail);
            matching.into_iter().skip(skip).collect()
        }
    }
}

/// The lifecycle lines of a worker that started at emulated `started_at`.
pub struct WorkerLife<'a> {
    pub worker_id: &'a str,
    pub version: u64,
    pub image: &'a str,
    pub placed_on: &'a str,
    pub data_center: &'a str,
    pub started_at: u64,
    /// The line of a start that keeps failing: written instead of the container's start,
    /// once per attempt (every [`REPEAT_MS`] from the worker's start) up to now.
    pub failure: Option<String>,
}

pub fn worker_lines(w: &WorkerLife<'_>, clock: &Clock) -> Vec<LogLine> {
    if let Some(failure) = &w.failure {
        return failing_worker_lines(w, failure, clock);
    }
    let ts = clock.wall_at(w.started_at);
    let lines = [
        (
            LogSource::System,
            format!(
                "worker {} scheduled on {} in {}",
                w.worker_id, w.placed_on, w.data_center
            ),
        ),
        (LogSource::System, format!("pulling image {}", w.image)),
        (
            LogSource::System,
            format!("starting container (endpoint version {})", w.version),
        ),
        (
            LogSource::Container,
            "handler ready, waiting for jobs".to_string(),
        ),
    ];
    lines
        .into_iter()
        .enumerate()
        .map(|(seq, (source, line))| LogLine {
            ts,
            seq: seq as u64,
            source,
            line,
        })
        .collect()
}

/// A worker whose container never starts: placed, pulling, then its failure once per
/// attempt up to now (the last [`MAX_TAIL`] attempts).
fn failing_worker_lines(w: &WorkerLife<'_>, failure: &str, clock: &Clock) -> Vec<LogLine> {
    let ts = clock.wall_at(w.started_at);
    let mut lines = vec![
        LogLine {
            ts,
            seq: 0,
            source: LogSource::System,
            line: format!(
                "worker {} scheduled on {} in {}",
                w.worker_id, w.placed_on, w.data_center
            ),
        },
        LogLine {
            ts,
            seq: 1,
            source: LogSource::System,
            line: format!("pulling image {}", w.image),
        },
    ];
    let attempts = clock.now().saturating_sub(w.started_at) / REPEAT_MS + 1;
    let first = attempts.saturating_sub(MAX_TAIL as u64);
    lines.extend((first..attempts).map(|k| LogLine {
        ts: clock.wall_at(w.started_at + k * REPEAT_MS),
        seq: 2 + k,
        source: LogSource::System,
        line: failure.to_string(),
    }));
    lines
}

/// The event-stream text of `lines`.
pub fn event_stream(lines: &[&LogLine]) -> String {
    let mut out = String::new();
    for l in lines {
        let ts = rfc3339_secs(l.ts);
        let data = serde_json::to_string(&LogEvent {
            ts: ts.clone(),
            source: l.source,
            line: &l.line,
        })
        .unwrap_or_default();
        out.push_str(&format!("id: {ts}/{:012}\ndata: {data}\n\n", l.seq));
    }
    out
}

/// 404 for a worker the endpoint does not have (never had, or replaced/retired).
pub fn worker_not_found(endpoint: &str, worker: &str) -> Problem {
    Problem::not_found(format!("worker {worker} of endpoint {endpoint} not found"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines() -> Vec<LogLine> {
        let clock = Clock::new(1.0);
        worker_lines(
            &WorkerLife {
                worker_id: "w1",
                version: 2,
                image: "img:2",
                placed_on: "NVIDIA A40",
                data_center: "US-TX-3",
                started_at: 0,
                failure: None,
            },
            &clock,
        )
    }

    #[test]
    fn a_failing_worker_repeats_its_failure_once_per_attempt() {
        let clock = Clock::new(1.0);
        let life = WorkerLife {
            worker_id: "w1",
            version: 1,
            image: "img:404",
            placed_on: "NVIDIA A40",
            data_center: "US-TX-3",
            started_at: 0,
            failure: Some("failed to pull image \"img:404\"".to_string()),
        };
        let texts =
            |lines: Vec<LogLine>| -> Vec<String> { lines.into_iter().map(|l| l.line).collect() };
        let at_start = texts(worker_lines(&life, &clock));
        assert_eq!(
            at_start,
            [
                "worker w1 scheduled on NVIDIA A40 in US-TX-3",
                "pulling image img:404",
                "failed to pull image \"img:404\"",
            ]
        );
        clock.advance(2 * REPEAT_MS + 1);
        let later = worker_lines(&life, &clock);
        assert_eq!(later.len(), 5, "one more line per attempt");
        assert!(later.iter().all(|l| l.source == LogSource::System));
        assert!(!later.iter().any(|l| l.line.contains("handler ready")));
        // Each attempt is its own event: a reader resuming after one gets the next.
        let seqs: Vec<u64> = later.iter().map(|l| l.seq).collect();
        assert_eq!(seqs, [0, 1, 2, 3, 4]);
        assert_eq!(
            later[4].ts.as_second() - later[2].ts.as_second(),
            (2 * REPEAT_MS / 1000) as i64
        );
    }

    #[test]
    fn tail_source_and_cursors() {
        let all = lines();
        let q = |source, tail, since: Option<&str>, last: Option<&str>| {
            let s = selection(
                &LogQuery {
                    source,
                    tail,
                    since: since.map(str::to_string),
                },
                last,
            )
            .unwrap();
            select(&all, &s).iter().map(|l| l.seq).collect::<Vec<_>>()
        };
        assert_eq!(q(None, None, None, None), vec![0, 1, 2, 3]);
        assert_eq!(q(None, Some(2), None, None), vec![2, 3]);
        assert_eq!(q(None, Some(0), None, None), Vec::<u64>::new());
        assert_eq!(q(Some(LogSource::Container), None, None, None), vec![3]);
        let ts = rfc3339_secs(all[0].ts);
        let id = format!("{ts}/{:012}", 1);
        assert_eq!(q(None, Some(0), None, Some(&id)), vec![2, 3]);
        assert_eq!(q(None, Some(0), Some(&ts), None), vec![0, 1, 2, 3]);
        // Last-Event-ID wins over since.
        assert_eq!(
            q(None, None, Some("2999-01-01T00:00:00Z"), Some(&id)),
            vec![2, 3]
        );
        assert!(q(None, None, Some("2999-01-01T00:00:00Z"), None).is_empty());
    }

    #[test]
    fn malformed_queries_are_422() {
        for (tail, since, last) in [
            (Some(5001), None, None),
            (Some(-1), None, None),
            (None, Some("yesterday"), None),
            (None, None, Some("nope/x")),
        ] {
            let p = selection(
                &LogQuery {
                    source: None,
                    tail,
                    since: since.map(str::to_string),
                },
                last,
            )
            .unwrap_err();
            assert_eq!(p.status.as_u16(), 422);
        }
    }

    #[test]
    fn events_carry_id_and_json_data() {
        let all = lines();
        let text = event_stream(&all.iter().collect::<Vec<_>>());
        let first = text.split("\n\n").next().unwrap();
        let (id, data) = first.split_once('\n').unwrap();
        assert!(
            id.starts_with("id: ") && id.ends_with("/000000000000"),
            "{id}"
        );
        let data: serde_json::Value =
            serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
        assert_eq!(data["source"], "system");
        assert!(data["line"].as_str().unwrap().contains("w1"));
        assert!(data["ts"].as_str().unwrap().ends_with('Z'));
    }
}
