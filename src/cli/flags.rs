//! Parsers of the flags several commands share.

use std::time::Duration;

use gpucloud_engine::annotations::parse_duration;

/// A duration flag: `30s`, `5m`, `1h`, `1h30m` or a bare number of seconds.
pub fn duration_arg(text: &str) -> Result<Duration, String> {
    parse_duration(text).ok_or_else(|| format!("{text:?} is not a duration such as 30s, 5m or 1h"))
}
