//! Which platform backend the operator under test speaks, and the emulator's names for
//! the calls each backend makes. The suites run once per backend (`scripts/test.sh` sets
//! `GPUCLOUD_TEST_PLATFORM_API`); the platform's side is looked at through the seed
//! surfaces on both, since the emulator keeps one world behind every surface.

#![allow(dead_code)]

/// The backend of this run: `v2` (the default, as the operator's) or `seed`.
pub fn backend() -> &'static str {
    match std::env::var("GPUCLOUD_TEST_PLATFORM_API").as_deref() {
        Ok("seed") => "seed",
        Ok("v2") | Err(_) => "v2",
        Ok(other) => panic!("GPUCLOUD_TEST_PLATFORM_API must be v2 or seed, not {other:?}"),
    }
}

pub fn is_v2() -> bool {
    backend() == "v2"
}

/// The first line of a test that applies to one backend only, whose name says so: a test
/// named `v2_only_*` needs REST v2, `seed_only_*` the seed API. Each lane of
/// `scripts/test.sh` leaves the other backend's tests out by name (`--skip`) and says how
/// many; run on the wrong backend anyway, the test fails here rather than passing empty.
pub fn require(wanted: &str) {
    let actual = backend();
    assert_eq!(
        actual, wanted,
        "this test needs the {wanted} backend, not {actual}: the {actual} lane leaves it out \
         with `--skip {wanted}_only_`"
    );
}

/// The emulator's route names (as `/_emulator/calls` counts them) of the operator's calls.
#[derive(Clone, Copy, Debug)]
pub struct Routes {
    pub list_volumes: &'static str,
    pub get_volume: &'static str,
    pub create_volume: &'static str,
    pub list_endpoints: &'static str,
    pub create_endpoint: &'static str,
    pub update_endpoint: &'static str,
    pub list_pods: &'static str,
    pub deploy_pod: &'static str,
    pub resume_pod: &'static str,
    pub stop_pod: &'static str,
}

const SEED: Routes = Routes {
    list_volumes: "GET /v1/networkvolumes",
    get_volume: "GET /v1/networkvolumes/{id}",
    create_volume: "POST /v1/networkvolumes",
    list_endpoints: "GET /v1/endpoints",
    create_endpoint: "POST /v1/endpoints",
    update_endpoint: "PATCH /v1/endpoints/{id}",
    list_pods: "graphql:myself",
    deploy_pod: "graphql:podFindAndDeployOnDemand",
    resume_pod: "graphql:podResume",
    stop_pod: "graphql:podStop",
};

const V2: Routes = Routes {
    list_volumes: "GET /v2/network-volumes",
    get_volume: "GET /v2/network-volumes/{id}",
    create_volume: "POST /v2/network-volumes",
    list_endpoints: "GET /v2/serverless",
    create_endpoint: "POST /v2/serverless",
    update_endpoint: "PATCH /v2/serverless/{id}",
    list_pods: "GET /v2/pods",
    deploy_pod: "POST /v2/pods",
    resume_pod: "POST /v2/pods/{id}/action",
    stop_pod: "POST /v2/pods/{id}/action",
};

pub fn routes() -> Routes {
    if is_v2() { V2 } else { SEED }
}
