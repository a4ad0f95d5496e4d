//! Logging set-up: `tracing` with text or JSON output.
