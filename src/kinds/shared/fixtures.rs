//! What the kinds' unit tests build their objects from: the metadata of an applied object
//! in a namespace, with a UID, from which the default remote names are derived
//! (`team-a-<name>-1b4e28ba`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The metadata of object `name` in namespace `team-a`.
pub fn applied(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some("team-a".into()),
        uid: Some("1b4e28ba-2fa1-11d2-883f-0016d3cca427".into()),
        ..Default::default()
    }
}

/// A Kubernetes client that is never called: for an adapter whose tested part makes no
/// Kubernetes call. Needs a Tokio runtime.
pub fn idle_kube_client() -> kube::Client {
    let config = kube::Config::new("http://127.0.0.1:9".parse().expect("a valid URL"));
    kube::Client::try_from(config).expect("a client of a static config")
}
