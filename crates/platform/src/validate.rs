//! Checks run before any request, from the spec's limits: a bad argument is refused
//! locally, naming the field, instead of costing a call (or a 400 we must then explain).

use std::time::Duration;

use serde_json::Value;

use super::error::PlatformError;
use super::types::{
    EndpointCreate, EndpointUpdate, JobPolicy, JobRequest, NetworkVolumeCreate,
    NetworkVolumeUpdate, TemplateCreate,
};

type Result<T = ()> = std::result::Result<T, PlatformError>;

fn bad(field: &str, detail: impl Into<String>) -> PlatformError {
    PlatformError::invalid_input(field, detail)
}

const SEVEN_DAYS_MS: u64 = 7 * 24 * 3600 * 1000;
/// `/run` payload limit.
pub const RUN_MAX_BYTES: usize = 10 * 1024 * 1024;
/// `/runsync` payload limit.
pub const RUNSYNC_MAX_BYTES: usize = 20 * 1024 * 1024;
/// Largest network volume, in GB.
pub const VOLUME_MAX_GB: i64 = 4000;

/// Identifiers go into URL paths and GraphQL variables: refuse what no platform id looks
/// like (empty, slashes, spaces, control characters) before it can change the path.
pub fn id(field: &str, value: &str) -> Result {
    if value.is_empty() {
        return Err(bad(field, "must not be empty"));
    }
    if value.len() > 256 {
        return Err(bad(field, "is longer than 256 characters"));
    }
    if !value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
    {
        return Err(bad(
            field,
            "may only hold letters, digits, '-', '_', '.' and ':'",
        ));
    }
    if value == "." || value == ".." {
        return Err(bad(field, "must not be a relative path segment"));
    }
    Ok(())
}

/// A name: non-empty, printable, bounded.
pub fn name(field: &str, value: &str) -> Result {
    if value.trim().is_empty() {
        return Err(bad(field, "must not be empty"));
    }
    if value.chars().count() > 256 {
        return Err(bad(field, "is longer than 256 characters"));
    }
    if value.chars().any(char::is_control) {
        return Err(bad(field, "must not contain control characters"));
    }
    Ok(())
}

fn range_ms(field: &str, v: u64, min: u64, max: u64) -> Result {
    if v < min || v > max {
        return Err(bad(
            field,
            format!("must be between {min} and {max} ms, got {v}"),
        ));
    }
    Ok(())
}

pub fn policy(p: &JobPolicy) -> Result {
    if let Some(t) = p.execution_timeout {
        range_ms("policy.executionTimeout", t, 5_000, SEVEN_DAYS_MS)?;
    }
    if let Some(t) = p.ttl {
        range_ms("policy.ttl", t, 10_000, SEVEN_DAYS_MS)?;
    }
    Ok(())
}

/// A job submission and its serialised size against the surface's payload limit.
pub fn job_request(req: &JobRequest, body_len: usize, max_bytes: usize) -> Result {
    if !req.input.is_object() {
        return Err(bad("input", "must be a JSON object"));
    }
    if let Some(hook) = &req.webhook {
        let ok = url::Url::parse(hook).is_ok_and(|u| matches!(u.scheme(), "http" | "https"));
        if !ok {
            return Err(bad("webhook", "must be an http(s) URL"));
        }
    }
    if let Some(p) = &req.policy {
        policy(p)?;
    }
    if let Some(s3) = &req.s3_config {
        if s3.bucket_name.is_empty() {
            return Err(bad("s3Config.bucketName", "must not be empty"));
        }
        if url::Url::parse(&s3.endpoint_url).is_err() {
            return Err(bad("s3Config.endpointUrl", "must be a URL"));
        }
    }
    if body_len > max_bytes {
        return Err(bad(
            "input",
            format!("payload is {body_len} bytes, the limit is {max_bytes}"),
        ));
    }
    Ok(())
}

/// `/runsync`'s `wait`: 1000..=300000 ms.
pub fn runsync_wait(wait: Duration) -> Result {
    range_ms("wait", wait.as_millis() as u64, 1_000, 300_000)
}

/// `/status`'s `ttl`: the job TTL range, 10 s .. 7 days.
pub fn status_ttl(ttl: Duration) -> Result {
    range_ms("ttl", ttl.as_millis() as u64, 10_000, SEVEN_DAYS_MS)
}

pub fn volume_update(u: &NetworkVolumeUpdate) -> Result {
    if u.name.is_none() && u.size.is_none() {
        return Err(bad(
            "networkVolumeUpdateInput",
            "sets neither name nor size",
        ));
    }
    if let Some(n) = &u.name {
        name("name", n)?;
    }
    if let Some(s) = u.size
        && !(0..=VOLUME_MAX_GB).contains(&s)
    {
        return Err(bad(
            "size",
            format!("must be between 0 and {VOLUME_MAX_GB} GB, got {s}"),
        ));
    }
    Ok(())
}

pub fn volume_create(c: &NetworkVolumeCreate) -> Result {
    name("name", &c.name)?;
    if !(1..=VOLUME_MAX_GB).contains(&c.size) {
        return Err(bad(
            "size",
            format!("must be between 1 and {VOLUME_MAX_GB} GB, got {}", c.size),
        ));
    }
    id("dataCenterId", &c.data_center_id)
}

fn workers(min: Option<i64>, max: Option<i64>) -> Result {
    if let Some(m) = min
        && m < 0
    {
        return Err(bad("workersMin", "must not be negative"));
    }
    if let Some(m) = max
        && m < 0
    {
        return Err(bad("workersMax", "must not be negative"));
    }
    if let (Some(lo), Some(hi)) = (min, max)
        && lo > hi
    {
        return Err(bad(
            "workersMin",
            format!("({lo}) exceeds workersMax ({hi})"),
        ));
    }
    Ok(())
}

fn gpu_type_ids(ids: &[String]) -> Result {
    if ids.is_empty() {
        return Err(bad("gpuTypeIds", "must list at least one GPU type"));
    }
    for g in ids {
        name("gpuTypeIds", g)?;
    }
    Ok(())
}

fn idle_timeout(t: i64) -> Result {
    // Seconds, 1..=3600 on the public platform.
    if !(1..=3600).contains(&t) {
        return Err(bad(
            "idleTimeout",
            format!("must be between 1 and 3600 s, got {t}"),
        ));
    }
    Ok(())
}

pub fn endpoint_create(c: &EndpointCreate) -> Result {
    name("name", &c.name)?;
    id("templateId", &c.template_id)?;
    gpu_type_ids(&c.gpu_type_ids)?;
    workers(Some(c.workers_min), Some(c.workers_max))?;
    idle_timeout(c.idle_timeout)?;
    if let Some(v) = &c.options.network_volume_id {
        id("networkVolumeId", v)?;
    }
    if let Some(g) = c.options.gpu_count
        && g < 1
    {
        return Err(bad("gpuCount", "must be at least 1"));
    }
    Ok(())
}

pub fn endpoint_update(u: &EndpointUpdate) -> Result {
    if let Some(n) = &u.name {
        name("name", n)?;
    }
    if let Some(t) = &u.template_id {
        id("templateId", t)?;
    }
    if let Some(g) = &u.gpu_type_ids {
        gpu_type_ids(g)?;
    }
    workers(u.workers_min, u.workers_max)?;
    if let Some(t) = u.idle_timeout {
        idle_timeout(t)?;
    }
    Ok(())
}

pub fn template_create(c: &TemplateCreate) -> Result {
    name("name", &c.name)?;
    name("imageName", &c.image_name)
}

/// A JSON value given on the command line or by a caller as a job input.
pub fn json_object(field: &str, v: &Value) -> Result {
    if v.is_object() {
        Ok(())
    } else {
        Err(bad(field, "must be a JSON object"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field_of(e: PlatformError) -> String {
        match e {
            PlatformError::InvalidInput { field, .. } => field,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ids_refuse_path_tricks() {
        assert!(id("endpointId", "abc-123_x.y").is_ok());
        for bad in ["", "a/b", "..", "a b", "a?b", "a#b", "é"] {
            assert_eq!(
                field_of(id("endpointId", bad).unwrap_err()),
                "endpointId",
                "{bad:?}"
            );
        }
    }

    #[test]
    fn policy_ranges_from_the_spec() {
        let p = |t: Option<u64>, ttl: Option<u64>| JobPolicy {
            execution_timeout: t,
            low_priority: None,
            ttl,
        };
        assert!(policy(&p(Some(5_000), Some(10_000))).is_ok());
        assert!(policy(&p(Some(SEVEN_DAYS_MS), Some(SEVEN_DAYS_MS))).is_ok());
        assert_eq!(
            field_of(policy(&p(Some(4_999), None)).unwrap_err()),
            "policy.executionTimeout"
        );
        assert_eq!(
            field_of(policy(&p(None, Some(9_999))).unwrap_err()),
            "policy.ttl"
        );
        assert_eq!(
            field_of(policy(&p(None, Some(SEVEN_DAYS_MS + 1))).unwrap_err()),
            "policy.ttl"
        );
    }

    #[test]
    fn job_request_checks_input_webhook_and_size() {
        let ok = JobRequest::new(json!({"a": 1}));
        assert!(job_request(&ok, 10, RUN_MAX_BYTES).is_ok());
        assert_eq!(
            field_of(job_request(&JobRequest::new(json!([1])), 3, 10).unwrap_err()),
            "input"
        );
        let mut hook = ok.clone();
        hook.webhook = Some("ftp://x".into());
        assert_eq!(
            field_of(job_request(&hook, 10, RUN_MAX_BYTES).unwrap_err()),
            "webhook"
        );
        assert_eq!(
            field_of(job_request(&ok, RUN_MAX_BYTES + 1, RUN_MAX_BYTES).unwrap_err()),
            "input"
        );
        assert!(job_request(&ok, RUN_MAX_BYTES + 1, RUNSYNC_MAX_BYTES).is_ok());
    }

    #[test]
    fn wait_and_ttl_ranges() {
        assert!(runsync_wait(Duration::from_millis(1_000)).is_ok());
        assert!(runsync_wait(Duration::from_millis(300_000)).is_ok());
        assert_eq!(
            field_of(runsync_wait(Duration::from_millis(999)).unwrap_err()),
            "wait"
        );
        assert_eq!(
            field_of(runsync_wait(Duration::from_secs(301)).unwrap_err()),
            "wait"
        );
        assert!(status_ttl(Duration::from_secs(10)).is_ok());
        assert_eq!(
            field_of(status_ttl(Duration::from_secs(9)).unwrap_err()),
            "ttl"
        );
    }

    #[test]
    fn volume_rules() {
        let u = |size| NetworkVolumeUpdate {
            name: None,
            size: Some(size),
        };
        assert!(volume_update(&u(0)).is_ok());
        assert!(volume_update(&u(4000)).is_ok());
        assert_eq!(field_of(volume_update(&u(4001)).unwrap_err()), "size");
        assert_eq!(field_of(volume_update(&u(-1)).unwrap_err()), "size");
        assert!(volume_update(&NetworkVolumeUpdate::default()).is_err());
        let c = NetworkVolumeCreate {
            name: "v".into(),
            size: 0,
            data_center_id: "EU-RO-1".into(),
        };
        assert_eq!(field_of(volume_create(&c).unwrap_err()), "size");
    }

    #[test]
    fn endpoint_rules() {
        let good = EndpointCreate {
            name: "e".into(),
            template_id: "tpl".into(),
            gpu_type_ids: vec!["NVIDIA A40".into()],
            workers_min: 0,
            workers_max: 2,
            idle_timeout: 5,
            ..Default::default()
        };
        assert!(endpoint_create(&good).is_ok());
        let mut e = good.clone();
        e.gpu_type_ids.clear();
        assert_eq!(field_of(endpoint_create(&e).unwrap_err()), "gpuTypeIds");
        let mut e = good.clone();
        e.workers_min = 3;
        assert_eq!(field_of(endpoint_create(&e).unwrap_err()), "workersMin");
        let mut e = good.clone();
        e.idle_timeout = 0;
        assert_eq!(field_of(endpoint_create(&e).unwrap_err()), "idleTimeout");
        let mut e = good;
        e.name = " ".into();
        assert_eq!(field_of(endpoint_create(&e).unwrap_err()), "name");
        let u = EndpointUpdate {
            workers_max: Some(-1),
            ..Default::default()
        };
        assert_eq!(field_of(endpoint_update(&u).unwrap_err()), "workersMax");
    }
}
