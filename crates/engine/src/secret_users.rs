//! Which Secrets the objects of one kind read, and which objects read a given Secret: both
//! answered from the kind's watch cache, so that the Secrets the operator reads again are
//! exactly those its objects name (and the default key's), whatever else the cluster holds.
//! No I/O: [`crate::secret_recheck`] reads the Secrets.

use std::collections::HashSet;

use kube::ResourceExt;

use super::cache::{Cache, CachedKind, in_namespace, key_of_object};
use super::conditions;
use super::credentials::SECRET_NOT_FOUND;
use super::secret_versions::secret_key;
use gpucloud_crd::ManagedKind;

/// A Secret some object reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedSecret {
    pub namespace: String,
    pub name: String,
    /// Its [`secret_key`].
    pub key: u64,
}

impl NamedSecret {
    pub fn new(namespace: &str, name: &str) -> Self {
        Self {
            namespace: namespace.to_string(),
            name: name.to_string(),
            key: secret_key(namespace, name),
        }
    }
}

/// The Secrets `obj` reads: those `names_of` gives (in its namespace), and the default
/// key's Secret (`namespace`, `name`) if the operator has one.
pub fn secrets_of<K: CachedKind>(
    obj: &K,
    names_of: impl Fn(&K) -> Vec<String>,
    default: Option<(&str, &str)>,
) -> Vec<NamedSecret> {
    let namespace = obj.namespace().unwrap_or_default();
    let mut out: Vec<NamedSecret> = names_of(obj)
        .iter()
        .map(|name| NamedSecret::new(&namespace, name))
        .collect();
    out.extend(default.map(|(ns, name)| NamedSecret::new(ns, name)));
    out
}

/// Every Secret the objects in `cache` read (see [`secrets_of`]), each once. What it costs
/// is one entry per Secret; each object is unpacked in turn and let go.
pub fn named_secrets<K: CachedKind>(
    cache: &Cache<K>,
    names_of: impl Fn(&K) -> Vec<String>,
    default: Option<(&str, &str)>,
) -> Vec<NamedSecret> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut add = |secret: NamedSecret| {
        if seen.insert(secret.key) {
            out.push(secret);
        }
    };
    if let Some((ns, name)) = default {
        add(NamedSecret::new(ns, name));
    }
    for obj in cache.objects(&|_| true) {
        for secret in secrets_of(&obj, &names_of, None) {
            add(secret);
        }
    }
    out
}

/// The keys of the objects in `cache` that read Secret `namespace/name`: those whose
/// `names_of` names it in that namespace, or all of them when it holds the operator's
/// default key (`default`). With `only_missing_it`, only those it says found no such
/// Secret at their last pass (see [`waits_for_a_missing_secret`]).
pub fn users_of_secret<K: CachedKind>(
    cache: &Cache<K>,
    names_of: impl Fn(&K) -> Vec<String>,
    namespace: &str,
    name: &str,
    default: bool,
    only_missing_it: Option<&dyn Fn(&K) -> bool>,
) -> Vec<String> {
    if default && only_missing_it.is_none() {
        // Every object reads the default key: no need to unpack one to know it.
        return cache.keys(|_| true);
    }
    cache
        .objects(&|key| default || in_namespace(key, namespace))
        .filter(|obj| default || names_of(obj).iter().any(|s| s == name))
        .filter(|obj| only_missing_it.is_none_or(|missing_it| missing_it(obj)))
        .map(|obj| key_of_object(&obj))
        .collect()
}

/// Whether the object's last pass ended because its Secret, or the key in it, was missing:
/// the only failure the first reading of a Secret can end. A refused key (`Unauthorized`,
/// `Forbidden`) or an unreadable value came from a Secret that was read; a first reading
/// says nothing new of it, and a pass for it would only repeat the refused call. A change
/// of the Secret re-triggers every user, whatever its failure.
pub fn waits_for_a_missing_secret<K: ManagedKind>(obj: &K) -> bool {
    obj.current_status()
        .and_then(|s| conditions::find(&K::common(s).conditions, conditions::READY))
        .is_some_and(|ready| ready.status != "True" && ready.reason == SECRET_NOT_FOUND)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpucloud_crd::condition::Condition;
    use gpucloud_crd::{NetworkVolume, NetworkVolumeSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use kube::runtime::watcher::Event;

    /// Volume `namespace/name`, reading its key from Secret `secret` if given.
    fn volume(namespace: &str, name: &str, secret: Option<&str>) -> NetworkVolume {
        let mut spec = serde_json::json!({"sizeGb": 10, "dataCenterId": "EU-RO-1"});
        if let Some(secret) = secret {
            spec["credentialsSecretRef"] = serde_json::json!({"name": secret});
        }
        let spec: NetworkVolumeSpec = serde_json::from_value(spec).unwrap();
        let mut nv = NetworkVolume::new(name, spec);
        nv.metadata.namespace = Some(namespace.into());
        nv.metadata.generation = Some(1);
        nv
    }

    fn with_ready(mut nv: NetworkVolume, status: &str, reason: &str) -> NetworkVolume {
        let mut st = gpucloud_crd::network_volume::NetworkVolumeStatus::default();
        st.common.conditions = vec![Condition {
            type_: "Ready".into(),
            status: status.into(),
            reason: reason.into(),
            message: "".into(),
            observed_generation: Some(1),
            last_transition_time: Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
        }];
        nv.status = Some(st);
        nv
    }

    fn cache_of(objects: &[NetworkVolume]) -> Cache<NetworkVolume> {
        let cache = Cache::new();
        for obj in objects {
            cache.apply(&Event::Apply(obj.clone()));
        }
        cache
    }

    /// What a kind that reads only its credentials Secret says it reads.
    fn credentials(obj: &NetworkVolume) -> Vec<String> {
        crate::adapter::secrets_with_credentials(obj, [])
    }

    /// The users of the operator's default key, `ops/key`, sorted.
    fn default_key_users(cache: &Cache<NetworkVolume>, only_missing_it: bool) -> Vec<String> {
        let missing_it: Option<&dyn Fn(&NetworkVolume) -> bool> =
            only_missing_it.then_some(&waits_for_a_missing_secret::<NetworkVolume>);
        let mut keys = users_of_secret(cache, credentials, "ops", "key", true, missing_it);
        keys.sort();
        keys
    }

    #[test]
    fn the_secrets_read_are_those_the_objects_name_and_the_default_once_each() {
        let cache = cache_of(&[
            volume("a", "one", Some("team")),
            volume("a", "two", Some("team")),
            volume("b", "three", Some("team")),
            volume("b", "four", None),
        ]);
        let mut names: Vec<(String, String)> =
            named_secrets(&cache, credentials, Some(("ops", "default-key")))
                .into_iter()
                .map(|s| (s.namespace, s.name))
                .collect();
        names.sort();
        let expected = [("a", "team"), ("b", "team"), ("ops", "default-key")]
            .map(|(ns, n)| (ns.to_string(), n.to_string()));
        assert_eq!(names, expected, "one entry per Secret, not per object");
        assert_eq!(named_secrets(&cache, credentials, None).len(), 2);
        assert!(named_secrets(&cache_of(&[]), credentials, None).is_empty());
    }

    #[test]
    fn an_objects_secrets_are_in_its_namespace() {
        let secrets = secrets_of(
            &volume("a", "one", Some("team")),
            credentials,
            Some(("ops", "key")),
        );
        assert_eq!(
            secrets,
            [
                NamedSecret::new("a", "team"),
                NamedSecret::new("ops", "key")
            ]
        );
        assert_ne!(secret_key("a", "team"), secret_key("b", "team"));
    }

    #[test]
    fn a_secrets_users_are_the_objects_that_name_it_in_its_namespace() {
        let cache = cache_of(&[
            volume("a", "one", Some("team")),
            volume("a", "two", Some("other")),
            volume("b", "three", Some("team")),
            volume("a", "four", None),
        ]);
        assert_eq!(
            users_of_secret(&cache, credentials, "a", "team", false, None),
            ["a/one"]
        );
        assert!(users_of_secret(&cache, credentials, "c", "team", false, None).is_empty());
        // The default key: every object, without a look at what each names.
        assert_eq!(
            default_key_users(&cache, false),
            ["a/four", "a/one", "a/two", "b/three"]
        );
    }

    #[test]
    fn a_first_reading_is_for_the_users_that_found_no_secret() {
        let cache = cache_of(&[
            with_ready(
                volume("a", "missing", Some("team")),
                "False",
                "CredentialsNotFound",
            ),
            with_ready(
                volume("a", "refused", Some("team")),
                "False",
                "Unauthorized",
            ),
            with_ready(volume("a", "ready", Some("team")), "True", "Available"),
            with_ready(volume("a", "default", None), "False", "CredentialsNotFound"),
        ]);
        assert_eq!(
            users_of_secret(
                &cache,
                credentials,
                "a",
                "team",
                false,
                Some(&waits_for_a_missing_secret::<NetworkVolume>)
            ),
            ["a/missing"]
        );
        // The default key: every object whose last pass found no key.
        assert_eq!(default_key_users(&cache, true), ["a/default", "a/missing"]);
    }

    #[test]
    fn only_objects_that_found_no_secret_wait_for_it() {
        let object = || volume("ns", "data", None);
        assert!(waits_for_a_missing_secret(&with_ready(
            object(),
            "False",
            "CredentialsNotFound"
        )));
        // The Secret was read and its key refused or unusable: its first reading is no news.
        for read_but_refused in [
            "Unauthorized",
            "Forbidden",
            "CredentialsInvalid",
            "CredentialsForbidden",
        ] {
            assert!(
                !waits_for_a_missing_secret(&with_ready(object(), "False", read_but_refused)),
                "{read_but_refused}"
            );
        }
        assert!(!waits_for_a_missing_secret(&with_ready(
            object(),
            "False",
            "InvalidSpec"
        )));
        assert!(!waits_for_a_missing_secret(&with_ready(
            object(),
            "True",
            "Available"
        )));
        assert!(!waits_for_a_missing_secret(&object()));
    }
}
