//! A process-wide capture of every log line, so that a suite can assert that no API key,
//! login or Secret value was ever written, whichever crate logged it. For tests only (the
//! `test-support` feature): this crate's own suites and the operator's end-to-end ones.

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

static CAPTURE: OnceLock<Capture> = OnceLock::new();

/// Installs the capture as the process's subscriber with `filter` (an `EnvFilter`
/// directive), once: the first call's filter wins, and it must come before anything else
/// installs a subscriber.
pub fn capture_logs_with(filter: &str) {
    CAPTURE.get_or_init(|| {
        let capture = Capture::default();
        let writer = capture.clone();
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .try_init();
        capture
    });
}

/// Everything logged so far.
pub fn captured() -> String {
    CAPTURE
        .get()
        .map(|c| String::from_utf8_lossy(&c.0.lock().unwrap()).into_owned())
        .unwrap_or_default()
}
