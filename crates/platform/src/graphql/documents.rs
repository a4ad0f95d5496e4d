//! The GraphQL documents the client sends, one `.graphql` file each (so editors and the
//! schema test read them as GraphQL). Documents that use the shared pod fragment carry it.

/// `podFindAndDeployOnDemand`.
pub const DEPLOY_POD: &str = include_str!("documents/deploy_pod.graphql");
/// `podResume`.
pub const RESUME_POD: &str = include_str!("documents/resume_pod.graphql");
/// `podStop`.
pub const STOP_POD: &str = include_str!("documents/stop_pod.graphql");
/// `podTerminate`.
pub const TERMINATE_POD: &str = include_str!("documents/terminate_pod.graphql");
/// `pod(input: {podId})`.
pub const POD: &str = concat!(
    include_str!("documents/pod.graphql"),
    include_str!("documents/pod_fields.graphql")
);
/// `myself { pods }`.
pub const MY_PODS: &str = concat!(
    include_str!("documents/my_pods.graphql"),
    include_str!("documents/pod_fields.graphql")
);
/// `gpuTypes` with `lowestPrice`.
pub const GPU_TYPES: &str = include_str!("documents/gpu_types.graphql");

/// Every document, named, for the test that validates them against the committed schema.
pub const ALL: &[(&str, &str)] = &[
    ("DeployPod", DEPLOY_POD),
    ("ResumePod", RESUME_POD),
    ("StopPod", STOP_POD),
    ("TerminatePod", TERMINATE_POD),
    ("Pod", POD),
    ("MyPods", MY_PODS),
    ("GpuTypes", GPU_TYPES),
];
