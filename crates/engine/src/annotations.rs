//! The annotations the engine reads and writes, and their parsing.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

/// Names the remote object. Written by the operator after a create; set by a person to
/// adopt an object that already exists on the platform.
pub const EXTERNAL_ID: &str = "gpucloud.io/external-id";
/// `"true"`: the operator leaves the object and the platform alone.
pub const PAUSED: &str = "gpucloud.io/paused";
/// Per-object resync interval, such as `30s`, `5m` or `1h`.
pub const POLL_INTERVAL: &str = "gpucloud.io/poll-interval";
/// Any new value forces a reconcile (for example the output of `date`).
pub const RECONCILE_REQUESTED_AT: &str = "gpucloud.io/reconcile-requested-at";
/// Written, conflict-checked, right before a create; its value is the time. While it is
/// present the remote object may exist without the operator knowing its id.
pub const CREATE_PENDING: &str = "gpucloud.io/external-create-pending";
/// Time of the last create the platform confirmed.
pub const CREATE_SUCCEEDED: &str = "gpucloud.io/external-create-succeeded";

/// The annotations only the engine writes, as notes to itself across passes and crashes.
/// A change to one of them is never a reason to reconcile: the pass that wrote it has
/// already decided what comes next, and reacting to its own notes would turn every refused
/// create (marker written, create refused, marker removed) into a loop.
pub const BOOKKEEPING: &[&str] = &[CREATE_PENDING, CREATE_SUCCEEDED];

/// Whether a change to annotation `key` should trigger a reconcile.
pub fn triggers_reconcile(key: &str) -> bool {
    !BOOKKEEPING.contains(&key)
}

/// The annotations of one object, read once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Annotations {
    pub external_id: Option<String>,
    pub paused: bool,
    pub poll_interval: Option<Result<Duration, String>>,
    pub create_pending: Option<Timestamp>,
    pub create_succeeded: Option<Timestamp>,
}

impl Annotations {
    pub fn read(annotations: Option<&BTreeMap<String, String>>) -> Self {
        let Some(a) = annotations else {
            return Self::default();
        };
        let get = |k: &str| a.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
        Self {
            external_id: get(EXTERNAL_ID).map(str::to_string),
            paused: get(PAUSED).is_some_and(|v| v.eq_ignore_ascii_case("true")),
            poll_interval: get(POLL_INTERVAL)
                .map(|v| parse_duration(v).ok_or_else(|| v.to_string())),
            create_pending: get(CREATE_PENDING).and_then(|v| v.parse().ok()),
            create_succeeded: get(CREATE_SUCCEEDED).and_then(|v| v.parse().ok()),
        }
    }
}

/// Parses `90s`, `5m`, `1h`, `1h30m` or a bare number of seconds. At least one second.
pub fn parse_duration(text: &str) -> Option<Duration> {
    if let Ok(secs) = text.parse::<u64>() {
        return (secs > 0).then(|| Duration::from_secs(secs));
    }
    let mut total = 0u64;
    let mut number = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let n: u64 = number.parse().ok()?;
        number.clear();
        total += match c {
            's' => n,
            'm' => n * 60,
            'h' => n * 3600,
            _ => return None,
        };
    }
    (number.is_empty() && total > 0).then(|| Duration::from_secs(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30"), Some(Duration::from_secs(30)));
        assert_eq!(parse_duration("90s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("5m"), Some(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_duration("0"), None);
        assert_eq!(parse_duration("5x"), None);
        assert_eq!(parse_duration("m"), None);
        assert_eq!(parse_duration("10m5"), None);
    }

    #[test]
    fn reads_the_engine_annotations() {
        let map = BTreeMap::from([
            (EXTERNAL_ID.to_string(), " vol-1 ".to_string()),
            (PAUSED.to_string(), "True".to_string()),
            (POLL_INTERVAL.to_string(), "soon".to_string()),
            (
                CREATE_PENDING.to_string(),
                "2026-11-21T10:00:00Z".to_string(),
            ),
        ]);
        let a = Annotations::read(Some(&map));
        assert_eq!(a.external_id.as_deref(), Some("vol-1"));
        assert!(a.paused);
        assert_eq!(a.poll_interval, Some(Err("soon".to_string())));
        assert_eq!(a.create_pending.unwrap().as_second(), 1_795_255_200);
        assert_eq!(a.create_succeeded, None);
    }

    #[test]
    fn empty_values_count_as_absent() {
        let map = BTreeMap::from([(EXTERNAL_ID.to_string(), "".to_string())]);
        assert_eq!(Annotations::read(Some(&map)).external_id, None);
        assert_eq!(Annotations::read(None), Annotations::default());
    }
}
