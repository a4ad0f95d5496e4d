//! The catalogue of calls: which surface each belongs to, its name in logs and metrics,
//! whether it may be repeated, and which rate-limit bucket it draws from.

/// The four API surfaces of the platform.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Surface {
    Jobs,
    Rest,
    Registry,
    Graphql,
}

impl Surface {
    pub fn as_str(self) -> &'static str {
        match self {
            Surface::Jobs => "jobs",
            Surface::Rest => "rest",
            Surface::Registry => "registry",
            Surface::Graphql => "graphql",
        }
    }
}

/// What may be repeated after a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Repeat {
    /// Reads and idempotent writes: retried on 429, 5xx, timeouts and connection errors.
    Safe,
    /// Calls that create something (a job, a pod, an endpoint, a volume) or that change
    /// state in a way a second call would not reproduce. Retried only when the platform
    /// certainly did not act: a 429 answer, or a connection that was never established.
    /// Everything else goes back to the caller, who can look the object up first.
    OnlyUnprocessed,
}

/// Rate-limit buckets. The job API's come from the spec's table (per endpoint); the
/// other surfaces have one configurable bucket each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LimitClass {
    JobRunSync,
    JobRun,
    JobStatus,
    JobStream,
    JobCancel,
    JobPurgeQueue,
    /// `/retry` and `/health`: not in the spec's table.
    JobOther,
    Rest,
    Registry,
    Graphql,
}

macro_rules! operations {
    ($( $variant:ident => ($surface:ident, $name:literal, $repeat:ident, $limit:ident) ),* $(,)?) => {
        /// One typed call of the client.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Operation { $($variant),* }

        impl Operation {
            /// Every operation, for tests and metric pre-registration.
            pub const ALL: &'static [Operation] = &[$(Operation::$variant),*];

            pub fn surface(self) -> Surface {
                match self { $(Operation::$variant => Surface::$surface),* }
            }
            /// `surface.name`, as used in errors, logs and metrics.
            pub fn name(self) -> &'static str {
                match self { $(Operation::$variant => $name),* }
            }
            pub fn repeat(self) -> Repeat {
                match self { $(Operation::$variant => Repeat::$repeat),* }
            }
            pub fn limit_class(self) -> LimitClass {
                match self { $(Operation::$variant => LimitClass::$limit),* }
            }
        }
    };
}

operations! {
    JobRun => (Jobs, "jobs.run", OnlyUnprocessed, JobRun),
    JobRunSync => (Jobs, "jobs.runsync", OnlyUnprocessed, JobRunSync),
    JobStatus => (Jobs, "jobs.status", Safe, JobStatus),
    JobStream => (Jobs, "jobs.stream", Safe, JobStream),
    JobCancel => (Jobs, "jobs.cancel", Safe, JobCancel),
    // A second retry of a job already back in the queue would fail confusingly.
    JobRetry => (Jobs, "jobs.retry", OnlyUnprocessed, JobOther),
    // Purging twice would remove jobs queued in between.
    JobPurgeQueue => (Jobs, "jobs.purge_queue", OnlyUnprocessed, JobPurgeQueue),
    JobHealth => (Jobs, "jobs.health", Safe, JobOther),

    RestListEndpoints => (Rest, "rest.list_endpoints", Safe, Rest),
    RestGetEndpoint => (Rest, "rest.get_endpoint", Safe, Rest),
    RestCreateEndpoint => (Rest, "rest.create_endpoint", OnlyUnprocessed, Rest),
    RestUpdateEndpoint => (Rest, "rest.update_endpoint", Safe, Rest),
    RestDeleteEndpoint => (Rest, "rest.delete_endpoint", Safe, Rest),
    RestListNetworkVolumes => (Rest, "rest.list_network_volumes", Safe, Rest),
    RestGetNetworkVolume => (Rest, "rest.get_network_volume", Safe, Rest),
    RestCreateNetworkVolume => (Rest, "rest.create_network_volume", OnlyUnprocessed, Rest),
    RestUpdateNetworkVolume => (Rest, "rest.update_network_volume", Safe, Rest),
    RestDeleteNetworkVolume => (Rest, "rest.delete_network_volume", Safe, Rest),
    RestListTemplates => (Rest, "rest.list_templates", Safe, Rest),
    RestGetTemplate => (Rest, "rest.get_template", Safe, Rest),
    RestCreateTemplate => (Rest, "rest.create_template", OnlyUnprocessed, Rest),
    RestUpdateTemplate => (Rest, "rest.update_template", Safe, Rest),
    RestDeleteTemplate => (Rest, "rest.delete_template", Safe, Rest),

    RegistryListDelegations => (Registry, "registry.list_delegations", Safe, Registry),

    GraphqlDeployPod => (Graphql, "graphql.podFindAndDeployOnDemand", OnlyUnprocessed, Graphql),
    // Resume, stop and terminate name their pod and aim at a state: repeating them is harmless.
    GraphqlResumePod => (Graphql, "graphql.podResume", Safe, Graphql),
    GraphqlStopPod => (Graphql, "graphql.podStop", Safe, Graphql),
    GraphqlTerminatePod => (Graphql, "graphql.podTerminate", Safe, Graphql),
    GraphqlPod => (Graphql, "graphql.pod", Safe, Graphql),
    GraphqlMyPods => (Graphql, "graphql.myself.pods", Safe, Graphql),
    GraphqlGpuTypes => (Graphql, "graphql.gpuTypes", Safe, Graphql),
}

impl Operation {
    /// True for calls that create a remote object: a failure that may have been carried
    /// out is flagged so (see [`super::PlatformError::may_have_been_applied`]).
    pub fn is_create(self) -> bool {
        matches!(
            self,
            Operation::JobRun
                | Operation::JobRunSync
                | Operation::RestCreateEndpoint
                | Operation::RestCreateNetworkVolume
                | Operation::RestCreateTemplate
                | Operation::GraphqlDeployPod
        )
    }

    /// Mutations that are not creates still change state; an unexplained failure of any
    /// non-repeatable call may have taken effect.
    pub fn may_apply_on_failure(self) -> bool {
        self.repeat() == Repeat::OnlyUnprocessed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_are_unique_and_prefixed_by_surface() {
        let mut seen = HashSet::new();
        for op in Operation::ALL {
            assert!(seen.insert(op.name()), "duplicate {}", op.name());
            assert!(
                op.name().starts_with(op.surface().as_str()),
                "{}",
                op.name()
            );
        }
    }

    #[test]
    fn creates_are_never_plainly_repeatable() {
        for op in Operation::ALL.iter().filter(|o| o.is_create()) {
            assert_eq!(op.repeat(), Repeat::OnlyUnprocessed, "{}", op.name());
        }
    }
}
