//! Server-Sent Events as the log routes send them: `id:` and `data:` lines, events ended
//! by a blank line. The decoder is pure; [`log_lines`] drives it from a response.

use std::pin::Pin;

use async_stream::try_stream;
use futures::Stream;

use super::types::LogLine;
use crate::error::{PlatformError, truncate};
use crate::operation::Operation;

/// Longest event accepted: a log line is short; a server that never ends an event must not
/// grow the buffer without bound.
const MAX_EVENT_BYTES: usize = 1024 * 1024;

/// Log lines as the platform streams them; ends when the platform closes the stream.
pub type LogStream = Pin<Box<dyn Stream<Item = Result<LogLine, PlatformError>> + Send>>;

/// One event: the `data:` lines joined by newlines, and its `id:` if it had one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Event {
    pub id: Option<String>,
    pub data: String,
}

/// Turns chunks of bytes into events; chunks may split lines (and UTF-8) anywhere.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    pending: Vec<u8>,
    id: Option<String>,
    data: Vec<String>,
}

impl Decoder {
    /// Feeds bytes, returning the events they complete.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Result<Vec<Event>, String> {
        self.pending.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
            let mut line: Vec<u8> = self.pending.drain(..=end).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let line = String::from_utf8_lossy(&line);
            if let Some(event) = self.line(&line) {
                events.push(event);
            }
        }
        let held = self.pending.len() + self.data.iter().map(String::len).sum::<usize>();
        if held > MAX_EVENT_BYTES {
            return Err(format!("an event is longer than {MAX_EVENT_BYTES} bytes"));
        }
        Ok(events)
    }

    fn line(&mut self, line: &str) -> Option<Event> {
        if line.is_empty() {
            if self.data.is_empty() {
                self.id = None;
                return None;
            }
            return Some(Event {
                id: self.id.take(),
                data: std::mem::take(&mut self.data).join("\n"),
            });
        }
        if line.starts_with(':') {
            // A comment, as servers send to keep the connection open.
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => self.data.push(value.to_owned()),
            "id" => self.id = Some(value.to_owned()),
            // `event:` and `retry:` carry nothing a log reader needs.
            _ => {}
        }
        None
    }
}

/// Parses an event's data as a log line, keeping the event id for resumption.
pub(crate) fn log_line(op: Operation, event: Event) -> Result<LogLine, PlatformError> {
    let mut line: LogLine = serde_json::from_str(&event.data).map_err(|e| {
        PlatformError::decode(
            op.name(),
            format!("log event {}: {e}", truncate(&event.data)),
        )
    })?;
    if line.id.is_none() {
        line.id = event.id;
    }
    Ok(line)
}

/// The log lines of an open event stream.
pub(crate) fn log_lines(op: Operation, mut response: reqwest::Response) -> LogStream {
    Box::pin(try_stream! {
        let mut decoder = Decoder::default();
        loop {
            let chunk = response.chunk().await.map_err(|e| PlatformError::Transient {
                operation: op.name(),
                status: None,
                detail: format!("log stream broke: {}", e.without_url()),
                maybe_applied: false,
            })?;
            let Some(chunk) = chunk else { break };
            let events = decoder
                .feed(&chunk)
                .map_err(|e| PlatformError::decode(op.name(), e))?;
            for event in events {
                yield log_line(op, event)?;
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_anywhere_are_reassembled() {
        let text = ": keep-alive\nid: 2026-01-01T00:00:00Z\ndata: {\"source\":\"container\",\"line\":\"hello\",\"ts\":\"2026-01-01T00:00:00Z\"}\n\nid: b\r\ndata: one\r\ndata: two\r\n\r\n";
        let bytes = text.as_bytes();
        for split in 0..bytes.len() {
            let mut d = Decoder::default();
            let mut events = d.feed(&bytes[..split]).unwrap();
            events.extend(d.feed(&bytes[split..]).unwrap());
            assert_eq!(events.len(), 2, "split at {split}");
            assert_eq!(events[0].id.as_deref(), Some("2026-01-01T00:00:00Z"));
            assert_eq!(
                events[1],
                Event {
                    id: Some("b".into()),
                    data: "one\ntwo".into()
                }
            );
        }
    }

    #[test]
    fn log_lines_keep_their_event_id() {
        let e = Event {
            id: Some("2026-01-01T00:00:01Z".into()),
            data: r#"{"source":"system","line":"pulling image","ts":"2026-01-01T00:00:01Z","extra":1}"#.into(),
        };
        let line = log_line(Operation::V2PodLogs, e).unwrap();
        assert_eq!(line.source, super::super::types::LogSource::System);
        assert_eq!(line.line, "pulling image");
        assert_eq!(line.id.as_deref(), Some("2026-01-01T00:00:01Z"));
        let bad = log_line(
            Operation::V2PodLogs,
            Event {
                id: None,
                data: "not json".into(),
            },
        )
        .unwrap_err();
        assert!(bad.to_string().contains("GET /v2/pods/{id}/logs"), "{bad}");
    }

    #[test]
    fn an_endless_event_is_refused() {
        let mut d = Decoder::default();
        let chunk = vec![b'x'; MAX_EVENT_BYTES + 1];
        assert!(d.feed(&chunk).is_err());
    }
}
