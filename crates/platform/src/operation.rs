//! The catalogue of calls: which surface each belongs to, its name in logs and metrics,
//! whether it may be repeated, and which rate-limit bucket it draws from.

/// The API surfaces of the platform: the four seed ones and REST v2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Surface {
    Jobs,
    Rest,
    Registry,
    Graphql,
    /// The REST v2 management API (`/v2/pods`, `/v2/serverless`, ...), which replaces REST
    /// v1 and GraphQL.
    RestV2,
}

impl Surface {
    pub fn as_str(self) -> &'static str {
        match self {
            Surface::Jobs => "jobs",
            Surface::Rest => "rest",
            Surface::Registry => "registry",
            Surface::Graphql => "graphql",
            Surface::RestV2 => "rest_v2",
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
    /// Every REST v2 call. The platform publishes its quota in each answer's `RateLimit`
    /// headers, which the transport follows on top of this bucket.
    RestV2,
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
            /// `surface.name` (REST v2: the route, `POST /v2/pods`), as used in errors, logs
            /// and metrics.
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
    RestListContainerRegistryAuths => (Rest, "rest.list_container_registry_auths", Safe, Rest),
    RestCreateContainerRegistryAuth => (Rest, "rest.create_container_registry_auth", OnlyUnprocessed, Rest),
    RestDeleteContainerRegistryAuth => (Rest, "rest.delete_container_registry_auth", Safe, Rest),

    RegistryListDelegations => (Registry, "registry.list_delegations", Safe, Registry),

    GraphqlDeployPod => (Graphql, "graphql.podFindAndDeployOnDemand", OnlyUnprocessed, Graphql),
    // Resume, stop and terminate name their pod and aim at a state: repeating them is harmless.
    GraphqlResumePod => (Graphql, "graphql.podResume", Safe, Graphql),
    GraphqlStopPod => (Graphql, "graphql.podStop", Safe, Graphql),
    GraphqlTerminatePod => (Graphql, "graphql.podTerminate", Safe, Graphql),
    GraphqlPod => (Graphql, "graphql.pod", Safe, Graphql),
    GraphqlMyPods => (Graphql, "graphql.myself.pods", Safe, Graphql),
    GraphqlGpuTypes => (Graphql, "graphql.gpuTypes", Safe, Graphql),

    // REST v2. Reads and PATCHes (which set fields to given values) are repeatable; creates
    // are not. A DELETE repeated after it took effect answers 404, which callers already
    // take as "gone". Actions aim at a state, and a repeat after success is refused with a
    // 409 (the action is no longer in the pod's `actions`), never applied twice; `restart`
    // is the exception: a second one would restart the container again.
    V2ListPods => (RestV2, "GET /v2/pods", Safe, RestV2),
    V2GetPod => (RestV2, "GET /v2/pods/{id}", Safe, RestV2),
    V2CreatePod => (RestV2, "POST /v2/pods", OnlyUnprocessed, RestV2),
    V2UpdatePod => (RestV2, "PATCH /v2/pods/{id}", Safe, RestV2),
    V2DeletePod => (RestV2, "DELETE /v2/pods/{id}", Safe, RestV2),
    V2StartPod => (RestV2, "POST /v2/pods/{id}/action start", Safe, RestV2),
    V2StopPod => (RestV2, "POST /v2/pods/{id}/action stop", Safe, RestV2),
    V2RestartPod => (RestV2, "POST /v2/pods/{id}/action restart", OnlyUnprocessed, RestV2),
    V2TerminatePod => (RestV2, "POST /v2/pods/{id}/action terminate", Safe, RestV2),
    V2PodLogs => (RestV2, "GET /v2/pods/{id}/logs", Safe, RestV2),

    V2ListEndpoints => (RestV2, "GET /v2/serverless", Safe, RestV2),
    V2GetEndpoint => (RestV2, "GET /v2/serverless/{id}", Safe, RestV2),
    V2CreateEndpoint => (RestV2, "POST /v2/serverless", OnlyUnprocessed, RestV2),
    V2UpdateEndpoint => (RestV2, "PATCH /v2/serverless/{id}", Safe, RestV2),
    V2DeleteEndpoint => (RestV2, "DELETE /v2/serverless/{id}", Safe, RestV2),
    V2EndpointWorkers => (RestV2, "GET /v2/serverless/{id}/workers", Safe, RestV2),
    V2EndpointReleases => (RestV2, "GET /v2/serverless/{id}/releases", Safe, RestV2),
    V2WorkerLogs => (RestV2, "GET /v2/serverless/{id}/workers/{workerId}/logs", Safe, RestV2),

    V2ListClusters => (RestV2, "GET /v2/clusters", Safe, RestV2),
    V2GetCluster => (RestV2, "GET /v2/clusters/{id}", Safe, RestV2),
    V2CreateCluster => (RestV2, "POST /v2/clusters", OnlyUnprocessed, RestV2),
    V2RenameCluster => (RestV2, "PATCH /v2/clusters/{id}", Safe, RestV2),
    V2DeleteCluster => (RestV2, "DELETE /v2/clusters/{id}", Safe, RestV2),
    V2ClusterPods => (RestV2, "GET /v2/clusters/{id}/pods", Safe, RestV2),

    V2ListTemplates => (RestV2, "GET /v2/templates", Safe, RestV2),
    V2GetTemplate => (RestV2, "GET /v2/templates/{id}", Safe, RestV2),
    V2CreateTemplate => (RestV2, "POST /v2/templates", OnlyUnprocessed, RestV2),
    V2UpdateTemplate => (RestV2, "PATCH /v2/templates/{id}", Safe, RestV2),
    V2DeleteTemplate => (RestV2, "DELETE /v2/templates/{id}", Safe, RestV2),

    V2ListNetworkVolumes => (RestV2, "GET /v2/network-volumes", Safe, RestV2),
    V2GetNetworkVolume => (RestV2, "GET /v2/network-volumes/{id}", Safe, RestV2),
    V2CreateNetworkVolume => (RestV2, "POST /v2/network-volumes", OnlyUnprocessed, RestV2),
    V2UpdateNetworkVolume => (RestV2, "PATCH /v2/network-volumes/{id}", Safe, RestV2),
    V2DeleteNetworkVolume => (RestV2, "DELETE /v2/network-volumes/{id}", Safe, RestV2),

    V2ListRegistries => (RestV2, "GET /v2/registries", Safe, RestV2),
    V2GetRegistry => (RestV2, "GET /v2/registries/{id}", Safe, RestV2),
    V2CreateRegistry => (RestV2, "POST /v2/registries", OnlyUnprocessed, RestV2),
    V2DeleteRegistry => (RestV2, "DELETE /v2/registries/{id}", Safe, RestV2),

    V2ListGpuTypes => (RestV2, "GET /v2/catalog/gpus", Safe, RestV2),
    V2GetGpuType => (RestV2, "GET /v2/catalog/gpus/{id}", Safe, RestV2),
    V2ListCpuTypes => (RestV2, "GET /v2/catalog/cpus", Safe, RestV2),
    V2GetCpuType => (RestV2, "GET /v2/catalog/cpus/{id}", Safe, RestV2),
    V2ListDataCenters => (RestV2, "GET /v2/catalog/datacenters", Safe, RestV2),
    V2GetDataCenter => (RestV2, "GET /v2/catalog/datacenters/{id}", Safe, RestV2),
    V2ListPublicTemplates => (RestV2, "GET /v2/catalog/templates", Safe, RestV2),

    V2Billing => (RestV2, "GET /v2/billing", Safe, RestV2),
    V2PodBilling => (RestV2, "GET /v2/billing/pods", Safe, RestV2),
    V2ServerlessBilling => (RestV2, "GET /v2/billing/serverless", Safe, RestV2),
    V2NetworkVolumeBilling => (RestV2, "GET /v2/billing/network-volumes", Safe, RestV2),
    V2ClusterBilling => (RestV2, "GET /v2/billing/clusters", Safe, RestV2),
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
                | Operation::RestCreateContainerRegistryAuth
                | Operation::GraphqlDeployPod
                | Operation::V2CreatePod
                | Operation::V2CreateEndpoint
                | Operation::V2CreateCluster
                | Operation::V2CreateTemplate
                | Operation::V2CreateNetworkVolume
                | Operation::V2CreateRegistry
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
            let prefix = match op.surface() {
                // v2 operations are named by their route.
                Surface::RestV2 => " /v2/",
                s => s.as_str(),
            };
            let head = op.name().trim_start_matches(char::is_alphabetic);
            let named = if op.surface() == Surface::RestV2 {
                head.starts_with(prefix)
            } else {
                op.name().starts_with(prefix)
            };
            assert!(named, "{}", op.name());
        }
    }

    #[test]
    fn v2_posts_other_than_actions_are_creates() {
        for op in Operation::ALL
            .iter()
            .filter(|o| o.surface() == Surface::RestV2)
        {
            let post = op.name().starts_with("POST ");
            let action = op.name().contains("/action ");
            assert_eq!(post && !action, op.is_create(), "{}", op.name());
            if !post {
                assert_eq!(op.repeat(), Repeat::Safe, "{}", op.name());
            }
        }
        assert_eq!(Operation::V2RestartPod.repeat(), Repeat::OnlyUnprocessed);
    }

    #[test]
    fn creates_are_never_plainly_repeatable() {
        for op in Operation::ALL.iter().filter(|o| o.is_create()) {
            assert_eq!(op.repeat(), Repeat::OnlyUnprocessed, "{}", op.name());
        }
    }
}
