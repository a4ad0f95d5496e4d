//! Logging set-up: `tracing` with text or JSON output, filtered by `RUST_LOG`.

use tracing_subscriber::EnvFilter;

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// What is logged when `RUST_LOG` is not set: `info`, but not the Kubernetes client's own
/// line for each failed request (`failed with error client error (SendRequest)`), which
/// names no request: an apiserver away for two minutes made a thousand of them. The
/// operator says what failed, with its kind and namespace, in its own lines (the watches'
/// health, the apiserver's reach, the Lease, each object's conditions).
const DEFAULT_FILTER: &str = "info,kube_client::client::builder=off";

fn filter() -> EnvFilter {
    EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER))
}

/// Installs the global subscriber. `RUST_LOG` overrides the default ([`DEFAULT_FILTER`]).
/// Calling it twice is harmless (the second call does nothing).
pub fn init(format: LogFormat) {
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter())
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}

/// Installs the global subscriber writing text lines to `file`, for commands whose terminal
/// belongs to something else (the demo's live table).
pub fn init_to_file(file: std::fs::File) {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter())
        .with_ansi(false)
        .with_writer(std::sync::Mutex::new(file))
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_filter_parses_and_keeps_info() {
        let filter = EnvFilter::try_new(DEFAULT_FILTER).expect("a valid filter");
        let said = filter.to_string();
        assert!(said.contains("kube_client::client::builder=off"), "{said}");
        assert!(said.starts_with("info") || said.contains(",info"), "{said}");
    }
}
