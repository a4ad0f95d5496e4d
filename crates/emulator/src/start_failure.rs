//! Why a pod's container never comes up, as a test switches it on (`/_emulator/start-failures`):
//! the image is not in its registry, the registry refuses the login, or the host's driver
//! is older than the image needs.
//!
//! The platform reports none of this in a pod's fields (the published document has no
//! field for it: the pod just stays `STARTING` and bills). The reason shows only in the
//! system lines of the pod's log stream, which is where the emulator writes it, one line
//! every [`REPEAT_MS`] for as long as the pod keeps trying.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

/// How often a failing start writes its line again, in emulated milliseconds (the
/// runtime's pull/start retry cadence).
pub const REPEAT_MS: u64 = 20_000;

/// The driver a CPU host (which reports none) is taken to have when a CUDA failure is asked for.
const CPU_HOST_CUDA: &str = "12.0";

/// One way a container fails to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum StartFailure {
    /// The image (name and tag) does not exist in its registry.
    ImageNotFound,
    /// The registry refuses the pod's credentials (or asks for some and got none).
    RegistryAuthRefused,
    /// The image needs a newer CUDA than the host's driver offers.
    CudaTooOld,
}

impl StartFailure {
    /// The system log line of one failed attempt, modelled on the container runtime's own
    /// messages (operators match on these texts).
    pub fn log_line(self, image: &str, host_cuda: Option<&str>) -> String {
        match self {
            Self::ImageNotFound => format!(
                "failed to pull image \"{image}\": manifest unknown: manifest for {image} not found"
            ),
            Self::RegistryAuthRefused => {
                format!("failed to pull image \"{image}\": unauthorized: authentication required")
            }
            Self::CudaTooOld => format!(
                "failed to start container: nvidia-container-cli: requirement error: unsatisfied condition: cuda>={}, please update your driver to a newer version",
                cuda_needed_above(host_cuda.unwrap_or(CPU_HOST_CUDA))
            ),
        }
    }
}

/// A CUDA version the host's `host` does not reach: four minor releases up, or the next
/// major when that would pass `.9` (12.4 -> 12.8, 12.8 -> 13.0).
pub fn cuda_needed_above(host: &str) -> String {
    // Parsed here rather than with the pods' helper: the pods import this module.
    let (major, minor) = host.split_once('.').unwrap_or((host, "0"));
    let (major, minor): (u32, u32) = (major.parse().unwrap_or(0), minor.parse().unwrap_or(0));
    if minor + 4 <= 9 {
        format!("{major}.{}", minor + 4)
    } else {
        format!("{}.0", major + 1)
    }
}

/// The failures switched on: by exact image name, and by registry credential id.
#[derive(Debug, Clone, Default)]
pub struct StartRules {
    by_image: HashMap<String, StartFailure>,
    refused_registries: HashSet<String>,
}

impl StartRules {
    pub fn fail_image(&mut self, image: &str, failure: StartFailure) {
        self.by_image.insert(image.to_string(), failure);
    }

    pub fn refuse_registry(&mut self, registry_id: &str) {
        self.refused_registries.insert(registry_id.to_string());
    }

    /// How a container of `image`, pulled with credential `registry`, fails to start, if it
    /// does. A rule on the image wins: it names the failure exactly.
    pub fn failure_for(&self, image: &str, registry: Option<&str>) -> Option<StartFailure> {
        self.by_image.get(image).copied().or_else(|| {
            registry
                .filter(|r| self.refused_registries.contains(*r))
                .map(|_| StartFailure::RegistryAuthRefused)
        })
    }

    pub fn is_empty(&self) -> bool {
        self.by_image.is_empty() && self.refused_registries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lines_carry_the_image_and_a_cuda_above_the_host() {
        assert_eq!(
            StartFailure::ImageNotFound.log_line("acme/app:v9", None),
            "failed to pull image \"acme/app:v9\": manifest unknown: manifest for acme/app:v9 not found"
        );
        assert_eq!(
            StartFailure::RegistryAuthRefused.log_line("ghcr.io/acme/private:1", None),
            "failed to pull image \"ghcr.io/acme/private:1\": unauthorized: authentication required"
        );
        assert_eq!(
            StartFailure::CudaTooOld.log_line("x", Some("12.4")),
            "failed to start container: nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.8, please update your driver to a newer version"
        );
        assert_eq!(cuda_needed_above("12.8"), "13.0");
        assert_eq!(cuda_needed_above("11.8"), "12.0");
        assert_eq!(cuda_needed_above("12.0"), "12.4");
    }

    #[test]
    fn an_image_rule_wins_over_a_refused_registry() {
        let mut rules = StartRules::default();
        assert!(rules.is_empty());
        rules.refuse_registry("reg-1");
        assert_eq!(
            rules.failure_for("a", Some("reg-1")),
            Some(StartFailure::RegistryAuthRefused)
        );
        assert_eq!(rules.failure_for("a", Some("reg-2")), None);
        assert_eq!(rules.failure_for("a", None), None);
        rules.fail_image("a", StartFailure::CudaTooOld);
        assert_eq!(
            rules.failure_for("a", Some("reg-1")),
            Some(StartFailure::CudaTooOld)
        );
        // Exactly this name: another tag is another image.
        assert_eq!(rules.failure_for("a:latest", None), None);
    }
}
