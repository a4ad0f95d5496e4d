//! Where a pod may go, GPU or CPU, as one ordered list the deploy walks ([`Offer`]), and
//! the pure checks around it: the data centers a globally networked pod may use, and the
//! price a created pod is billed at against the cap.
//!
//! Price as billed: the catalog's quote is not always what the platform bills (a pod
//! quoted at $0.98/h has been created at $1.52/h). The created pod's own `cost` is the
//! truth, and it comes with the create's answer, so the check costs no extra call.

use gpucloud_engine::failure::Failure;
use gpucloud_platform::domain::{CpuPlacement, Placement};
use gpucloud_policy::cpu_placement::{CpuCandidate, describe_cpu};
use gpucloud_policy::placement::{self, Candidate};

/// One place a deploy is tried: a GPU type or a CPU flavor, in a data center.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    Gpu(Placement),
    Cpu(CpuPlacement),
}

impl Target {
    /// How the target reads in Events.
    pub fn describe(&self) -> String {
        match self {
            Target::Gpu(p) => placement::describe(p),
            Target::Cpu(p) => describe_cpu(p),
        }
    }
}

/// A target with the hourly price of the whole pod the catalog quotes there.
#[derive(Clone, Debug, PartialEq)]
pub struct Offer {
    pub target: Target,
    pub price_per_hour: f64,
}

impl From<Candidate> for Offer {
    fn from(c: Candidate) -> Self {
        Self {
            target: Target::Gpu(c.placement),
            price_per_hour: c.price_per_hour,
        }
    }
}

impl From<CpuCandidate> for Offer {
    fn from(c: CpuCandidate) -> Self {
        Self {
            target: Target::Cpu(c.placement),
            price_per_hour: c.price_per_hour,
        }
    }
}

/// Pure: the price a pod is billed at, when it is above `cap` (the whole pod's hourly
/// cap); `None` when there is no cap, no billed price (the seed API's deploy answers
/// none), or the price is within the cap.
pub fn billed_above_cap(cap: Option<f64>, billed: Option<f64>) -> Option<f64> {
    let (cap, billed) = (cap?, billed?);
    (billed > cap + 1e-9).then_some(billed)
}

/// Pure: the Event's note for a pod created at `billed` per hour although the catalog
/// quoted `quoted`, above `cap`; it was terminated, and what comes next.
pub fn billed_note(at: &str, id: &str, quoted: f64, billed: f64, cap: f64, next: &str) -> String {
    format!(
        "pod {id} on {at} was quoted ${quoted:.3}/h but is billed ${billed:.3}/h, above the cap of ${cap:.3}/h; terminated it, {next}"
    )
}

/// Pure: the data centers a pod with `globalNetworking` may use: those on the global
/// network (`global`), within the spec's `dataCenterId` when it names one. None left is
/// permanent: the spec asks for a data center the global network does not reach.
pub fn global_data_centers(
    spec_dc: Option<&str>,
    global: &[String],
) -> Result<Vec<String>, Failure> {
    let allowed: Vec<String> = global
        .iter()
        .filter(|dc| spec_dc.is_none_or(|want| want == dc.as_str()))
        .cloned()
        .collect();
    if allowed.is_empty() {
        let message = match spec_dc {
            Some(dc) => format!(
                "spec.dataCenterId {dc} is not on the global network, which spec.globalNetworking needs; data centers on it: {}",
                global.join(", ")
            ),
            None => {
                "spec.globalNetworking: the platform lists no data center on the global network"
                    .to_string()
            }
        };
        return Err(Failure::permanent("NotOnGlobalNetwork", message));
    }
    Ok(allowed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_billed_price_above_the_cap_counts() {
        assert_eq!(billed_above_cap(Some(0.50), Some(0.75)), Some(0.75));
        assert_eq!(billed_above_cap(Some(0.50), Some(0.50)), None);
        assert_eq!(billed_above_cap(Some(0.50), Some(0.30)), None);
        // No cap, or no billed figure (the seed API's deploy): nothing to compare.
        assert_eq!(billed_above_cap(None, Some(9.0)), None);
        assert_eq!(billed_above_cap(Some(0.50), None), None);
    }

    #[test]
    fn the_note_gives_both_figures_and_the_cap() {
        let note = billed_note("cpu3c × 4 vCPUs in EU-RO-1", "p1", 0.12, 0.18, 0.15, "x");
        assert!(note.contains("quoted $0.120/h"), "{note}");
        assert!(note.contains("billed $0.180/h"), "{note}");
        assert!(note.contains("cap of $0.150/h"), "{note}");
        assert!(note.contains("pod p1"), "{note}");
    }

    #[test]
    fn a_global_pod_stays_on_the_global_network() {
        let global = vec!["EU-RO-1".to_string(), "US-TX-3".to_string()];
        assert_eq!(global_data_centers(None, &global).unwrap(), global);
        assert_eq!(
            global_data_centers(Some("US-TX-3"), &global).unwrap(),
            ["US-TX-3"]
        );
        let err = global_data_centers(Some("EU-SE-1"), &global).unwrap_err();
        assert_eq!(err.reason, "NotOnGlobalNetwork");
        assert!(err.is_permanent());
        assert!(err.message.contains("EU-SE-1"), "{}", err.message);
    }
}
