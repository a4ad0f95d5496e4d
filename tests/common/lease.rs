//! The install's Lease, as the end-to-end suites read it.

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;

use super::operator::Env;

/// Who holds the test namespace's install Lease (`<namespace>/gpucloud-operator`), if
/// anyone.
pub async fn holder(env: &Env) -> Option<String> {
    let leases: Api<Lease> = env.api();
    leases
        .get_opt("gpucloud-operator")
        .await
        .unwrap()?
        .spec?
        .holder_identity
}
