//! Endpoint: the GPUs in one `gpu` block, and the timeouts as durations.
//!
//! - The shorthand `gpuTypeIds` + `gpuCount` is `gpu.typeIds` + `gpu.count`; the
//!   annotation says the shorthand was used (and whether `gpuCount` was set), so that the
//!   Endpoint comes back in the form it was written in.
//! - `idleTimeoutSeconds: 5` is `idleTimeout: 5s`; `executionTimeoutMs` is
//!   `executionTimeout` in whole seconds, rounded up (a job is never cut shorter than it
//!   was), and a value that is not whole seconds is kept in the annotation.
//! - A duration `v1beta1` spells otherwise than in its shortest form (`90s` for `1m30s`)
//!   keeps its spelling in the annotation of the `v1alpha1` object.

use super::ConversionError;
use super::shared::{Kept, Shorthand, carry, duration_of, seconds_of, spelled};
use crate::endpoint::{self as beta, EXECUTION_TIMEOUT_MESSAGE, EndpointGpu, IDLE_TIMEOUT_MESSAGE};
use crate::gpu::Gpu;
use crate::v1alpha1::endpoint as alpha;

const ONE_OF_GPU: &str =
    "set exactly one of gpuTypeIds (the shorthand of gpu.typeIds), gpu and cpu";
const COUNT_WITH_SHORTHAND: &str = "gpuCount goes with gpuTypeIds; with gpu, set gpu.count";

/// Moves an Endpoint spec to the other version; the fields both spell the same move as they
/// are.
macro_rules! spec {
    ($($how:tt)*) => {
        carry!($($how)*;
            same: name, template_id, template_ref, endpoint_type, load_balancer, cpu,
            workers_min, workers_max, scaler_type, scaler_value, flashboot, network_volume_ref,
            network_volume_id, write_connection_to, deletion_policy, management_policy,
            credentials_secret_ref)
    };
}

/// A `v1alpha1` Endpoint in `v1beta1`. Refused: the shorthand together with `gpu`,
/// `gpuCount` without the shorthand, and a negative timeout (none is a duration).
pub fn to_v1beta1(endpoint: alpha::Endpoint) -> Result<beta::Endpoint, ConversionError> {
    let mut metadata = endpoint.metadata;
    let spelling = Kept::take(&mut metadata);
    let mut kept = Kept::default();
    let spec = spec!(endpoint.spec => alpha::EndpointSpec, beta::EndpointSpec;
        bind: gpu_type_ids, gpu_count, gpu, idle_timeout_seconds, execution_timeout_ms;
        set: gpu: gpu_to_beta(gpu_type_ids, gpu_count, gpu, &mut kept)?,
            idle_timeout: idle_to_beta(idle_timeout_seconds, spelling.idle_timeout)?,
            execution_timeout: execution_to_beta(
                execution_timeout_ms,
                spelling.execution_timeout,
                &mut kept,
            )?);
    kept.put(&mut metadata);
    Ok(beta::Endpoint {
        metadata,
        spec,
        status: endpoint.status,
    })
}

/// A `v1beta1` Endpoint in `v1alpha1`. Refused: a timeout that is not a duration of hours,
/// minutes and seconds, or one too long for `v1alpha1`'s field.
pub fn to_v1alpha1(endpoint: beta::Endpoint) -> Result<alpha::Endpoint, ConversionError> {
    let mut metadata = endpoint.metadata;
    let kept = Kept::take(&mut metadata);
    let mut spelling = Kept::default();
    // The shorthand again while the block still has its shape: type ids, no pools.
    let shorthand = kept.gpu_shorthand.filter(|_| {
        endpoint.spec.gpu.as_ref().is_some_and(|g| {
            !g.gpu.type_ids.is_empty() && g.pools.is_empty() && g.excluded_types.is_empty()
        })
    });
    let spec = spec!(endpoint.spec => beta::EndpointSpec, alpha::EndpointSpec;
        bind: gpu, idle_timeout, execution_timeout;
        // In this order: the shorthand's two fields read `gpu`, which the third takes.
        set: gpu_type_ids: match (&shorthand, &gpu) {
                (Some(_), Some(g)) => g.gpu.type_ids.clone(),
                _ => Vec::new(),
            },
            gpu_count: match (&shorthand, &gpu) {
                (Some(Shorthand { gpu_count: None }), Some(g)) if g.gpu.count == 1 => None,
                (Some(_), Some(g)) => Some(g.gpu.count),
                _ => None,
            },
            gpu: gpu.filter(|_| shorthand.is_none()).map(|g| alpha::EndpointGpu {
                pools: g.pools,
                excluded_types: g.excluded_types,
                type_ids: g.gpu.type_ids,
                count: g.gpu.count,
            }),
            idle_timeout_seconds: idle_to_alpha(idle_timeout, &mut spelling)?,
            execution_timeout_ms: execution_to_alpha(
                execution_timeout,
                kept.execution_timeout_ms,
                &mut spelling,
            )?);
    spelling.put(&mut metadata);
    Ok(alpha::Endpoint {
        metadata,
        spec,
        status: endpoint.status,
    })
}

/// The shorthand or the `v1alpha1` block as the one `v1beta1` block.
fn gpu_to_beta(
    type_ids: Vec<String>,
    count: Option<i32>,
    gpu: Option<alpha::EndpointGpu>,
    kept: &mut Kept,
) -> Result<Option<EndpointGpu>, ConversionError> {
    match (type_ids.is_empty(), gpu) {
        (false, Some(_)) => Err(ConversionError::invalid("spec.gpuTypeIds", ONE_OF_GPU)),
        (true, _) if count.is_some() => Err(ConversionError::invalid(
            "spec.gpuCount",
            COUNT_WITH_SHORTHAND,
        )),
        (false, None) => {
            kept.gpu_shorthand = Some(Shorthand { gpu_count: count });
            Ok(Some(EndpointGpu {
                gpu: Gpu {
                    type_ids,
                    count: count.unwrap_or(1),
                },
                ..EndpointGpu::default()
            }))
        }
        (true, gpu) => Ok(gpu.map(|g| EndpointGpu {
            gpu: Gpu {
                type_ids: g.type_ids,
                count: g.count,
            },
            pools: g.pools,
            excluded_types: g.excluded_types,
        })),
    }
}

fn idle_to_beta(seconds: i32, spelling: Option<String>) -> Result<String, ConversionError> {
    if seconds < 0 {
        return Err(ConversionError::invalid(
            "spec.idleTimeoutSeconds",
            "must be from 1 to 3600",
        ));
    }
    Ok(spelled(i64::from(seconds), spelling))
}

/// Whole seconds, rounded up; the milliseconds kept when they are not whole seconds.
fn execution_to_beta(
    ms: Option<i64>,
    spelling: Option<String>,
    kept: &mut Kept,
) -> Result<Option<String>, ConversionError> {
    let Some(ms) = ms else { return Ok(None) };
    if ms < 0 {
        return Err(ConversionError::invalid(
            "spec.executionTimeoutMs",
            "must be from 5000 to 604800000",
        ));
    }
    if ms % 1000 != 0 {
        kept.execution_timeout_ms = Some(ms);
    }
    Ok(Some(spelled(whole_seconds(ms), spelling)))
}

fn idle_to_alpha(text: String, spelling: &mut Kept) -> Result<i32, ConversionError> {
    let field = "spec.idleTimeout";
    let seconds = seconds_of(&text, field, IDLE_TIMEOUT_MESSAGE)?;
    let seconds = i32::try_from(seconds)
        .map_err(|_| ConversionError::invalid(field, IDLE_TIMEOUT_MESSAGE))?;
    if duration_of(i64::from(seconds)) != text {
        spelling.idle_timeout = Some(text);
    }
    Ok(seconds)
}

/// The milliseconds `v1alpha1` said, while they still round up to these seconds (the field
/// was not edited since), else the seconds in milliseconds.
fn execution_to_alpha(
    text: Option<String>,
    kept_ms: Option<i64>,
    spelling: &mut Kept,
) -> Result<Option<i64>, ConversionError> {
    let Some(text) = text else { return Ok(None) };
    let field = "spec.executionTimeout";
    let seconds = seconds_of(&text, field, EXECUTION_TIMEOUT_MESSAGE)?;
    let ms = match kept_ms {
        Some(ms) if ms >= 0 && whole_seconds(ms) == seconds => ms,
        _ => seconds
            .checked_mul(1000)
            .ok_or_else(|| ConversionError::invalid(field, EXECUTION_TIMEOUT_MESSAGE))?,
    };
    if duration_of(seconds) != text {
        spelling.execution_timeout = Some(text);
    }
    Ok(Some(ms))
}

/// `ms` (not negative) in seconds, rounded up.
fn whole_seconds(ms: i64) -> i64 {
    ms / 1000 + i64::from(ms % 1000 != 0)
}
