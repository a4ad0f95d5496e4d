//! How the operator marks the remote objects it makes, and reads the marks back: the
//! deterministic name of an object the spec does not name, the tag a pod carries, the
//! install tag that says which install made it, and what the orphan sweep sees of any
//! remote object.
//!
//! The install tag: two clusters whose installs use one API key see each other's remote
//! objects, and each would take the other's for orphans (their markers name no object of
//! its own). A remote object made since the tag was introduced carries its install's tag,
//! six hex digits of the UID of the Lease the install holds (one per install and cluster,
//! kept across restarts and leader changes): in the name (`<namespace>-<name>-<8 hex>-i<tag>`)
//! or, for pods and cluster members, in the env [`INSTALL_TAG_ENV`]. The sweep judges only
//! remote objects with its own tag, or with none (made before the tag, or by an install
//! that could not read its Lease).

use kube::{Resource, ResourceExt};

/// Namespace, name and the first eight hex digits of the UID: readable on the platform's
/// console, and after a crash the operator finds its own object by it and never another
/// object's remote object of the same name (the UID differs).
pub fn default_remote_name<K: Resource>(obj: &K) -> String {
    let uid = obj.uid().unwrap_or_default();
    let suffix: String = uid.chars().filter(|c| *c != '-').take(8).collect();
    format!(
        "{}-{}-{}",
        obj.namespace().unwrap_or_default(),
        obj.name_any(),
        suffix
    )
}

/// The env variable that tags a pod (or a cluster member) with its install's tag.
pub const INSTALL_TAG_ENV: &str = "GPUCLOUD_INSTALL_TAG";

/// Which install made a remote object: six hex digits of the UID of the install's Lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstallTag(String);

impl InstallTag {
    /// The tag of the install whose Lease has UID `uid`; `None` for a UID with fewer than
    /// six hex digits.
    pub fn from_uid(uid: &str) -> Option<Self> {
        let hex: String = uid
            .chars()
            .filter(char::is_ascii_hexdigit)
            .take(6)
            .collect::<String>()
            .to_ascii_lowercase();
        (hex.len() == 6).then_some(InstallTag(hex))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Pure: the tag at the end of a name `...-i<6 hex>`, if any.
pub fn name_install_tag(name: &str) -> Option<&str> {
    let (_, last) = name.rsplit_once("-i")?;
    (last.len() == 6 && last.bytes().all(is_lower_hex)).then_some(last)
}

fn is_lower_hex(b: u8) -> bool {
    b.is_ascii_digit() || (b'a'..=b'f').contains(&b)
}

/// The remote name of an object the spec does not name, as a create gives it: the
/// [`default_remote_name`], with the install's tag when it has one.
pub fn tagged_remote_name<K: Resource>(obj: &K, tag: Option<&InstallTag>) -> String {
    match tag {
        Some(tag) => format!("{}-i{}", default_remote_name(obj), tag.as_str()),
        None => default_remote_name(obj),
    }
}

/// Pure: whether `name` is a name the operator gives `obj`: its [`default_remote_name`],
/// with any install's tag or none (an object made before the tag, or before a Lease was
/// made again, keeps its name).
pub fn names_object<K: Resource>(obj: &K, name: &str) -> bool {
    let base = default_remote_name(obj);
    match name.strip_prefix(base.as_str()) {
        Some("") => true,
        Some(rest) => rest
            .strip_prefix("-i")
            .is_some_and(|t| t.len() == 6 && t.bytes().all(is_lower_hex)),
        None => false,
    }
}

/// The name to ask for: the spec's (`spec_name`); for an object the spec does not name,
/// the one its remote object has (`status_name`, when it is one the operator gives it: no
/// rename after an upgrade or a new Lease), else the tagged name.
pub fn remote_name_of<K: Resource>(
    obj: &K,
    spec_name: Option<&str>,
    status_name: Option<&str>,
    tag: Option<&InstallTag>,
) -> String {
    match (spec_name, status_name) {
        (Some(name), _) => name.to_string(),
        (None, Some(name)) if names_object(obj, name) => name.to_string(),
        _ => tagged_remote_name(obj, tag),
    }
}

/// Pure: whether a remote object named `name` is `obj`'s by name: the spec's name when it
/// has one, else a name the operator gives it ([`names_object`]).
pub fn is_named_for<K: Resource>(obj: &K, spec_name: Option<&str>, name: &str) -> bool {
    match spec_name {
        Some(wanted) => name == wanted,
        None => names_object(obj, name),
    }
}

/// Pure: whether env variable `name` is one of the operator's marks (the object's UID, the
/// install's tag) rather than the user's: never a reason to replace or refuse a pod.
pub fn is_mark_env(name: &str) -> bool {
    name == TAG_ENV || name == INSTALL_TAG_ENV
}

/// `env` with this install's tag added (for a pod or a cluster's members), when it has one.
pub fn with_install_tag(
    mut env: Vec<(String, String)>,
    tag: Option<&InstallTag>,
) -> Vec<(String, String)> {
    env.retain(|(k, _)| k != INSTALL_TAG_ENV);
    if let Some(tag) = tag {
        env.push((INSTALL_TAG_ENV.to_string(), tag.as_str().to_string()));
    }
    env
}

/// Pure: the name `obj`'s remote object keeps, when the spec gives none and the remote
/// object has a name the operator gives it (with or without an install tag, or another
/// install's): a name is never changed between two of the operator's own.
pub fn kept_name<'r, K: Resource>(
    obj: &K,
    spec_name: Option<&str>,
    remote_name: &'r str,
) -> Option<&'r str> {
    (spec_name.is_none() && names_object(obj, remote_name)).then_some(remote_name)
}

/// The env variable that tags a pod with the whole UID of the object that deployed it
/// (the platform has no labels on pods; an env variable survives every pod action).
pub const TAG_ENV: &str = "GPUCLOUD_OBJECT_UID";

/// What says a remote object was made by this operator, and for which object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Marker {
    /// The whole UID of the object, from a tag (a pod's env).
    Uid(String),
    /// The first 8 hex digits of the object's UID, from the end of a deterministic name.
    UidPrefix(String),
}

impl Marker {
    pub fn uid(&self) -> &str {
        match self {
            Marker::Uid(uid) | Marker::UidPrefix(uid) => uid,
        }
    }
}

/// Pure: the UID prefix in a name of the form `<namespace>-<name>-<8 hex>`, with or without
/// an install tag after it (see [`tagged_remote_name`]); `None` for any other name.
pub fn name_marker(name: &str) -> Option<Marker> {
    let name = match name_install_tag(name) {
        Some(tag) => &name[..name.len() - tag.len() - 2],
        None => name,
    };
    let (head, suffix) = name.rsplit_once('-')?;
    let (namespace, object) = head.split_once('-')?;
    let hex = suffix.len() == 8
        && suffix
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    (hex && !namespace.is_empty() && !object.is_empty())
        .then(|| Marker::UidPrefix(suffix.to_string()))
}

/// A remote object as the sweep sees it, whatever its kind.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// The kind of the cluster object that makes it (`Pod`, `NetworkVolume`...).
    pub kind: &'static str,
    pub id: String,
    pub name: String,
    pub status: String,
    pub cost_per_hour: Option<f64>,
    pub marker: Option<Marker>,
    /// The tag of the install that made it (see [`InstallTag`]); `None` when it has none.
    pub install: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn obj() -> ConfigMap {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "data", "namespace": "team-a",
                         "uid": "1b4e28ba-2fa1-11d2-883f-0016d3cca427"}
        }))
        .unwrap()
    }

    #[test]
    fn an_install_tag_is_six_hex_digits_of_its_leases_uid() {
        let tag = InstallTag::from_uid("9F3A1C2E-0000-4000-8000-000000000000").unwrap();
        assert_eq!(tag.as_str(), "9f3a1c");
        assert_eq!(InstallTag::from_uid("12-3"), None);
    }

    #[test]
    fn a_tagged_name_still_names_the_object_and_its_uid() {
        let tag = InstallTag::from_uid("abcdef12").unwrap();
        let name = tagged_remote_name(&obj(), Some(&tag));
        assert_eq!(name, "team-a-data-1b4e28ba-iabcdef");
        assert_eq!(name_install_tag(&name), Some("abcdef"));
        assert_eq!(
            name_marker(&name),
            Some(Marker::UidPrefix("1b4e28ba".into()))
        );
        assert!(names_object(&obj(), &name));
        // Made before the tag, or by an install whose Lease was made again.
        assert!(names_object(&obj(), "team-a-data-1b4e28ba"));
        assert!(names_object(&obj(), "team-a-data-1b4e28ba-i123456"));
        assert!(!names_object(&obj(), "team-a-data-1b4e28ba-x"));
        assert!(!names_object(&obj(), "team-a-data-1b4e28bb"));
        assert_eq!(name_install_tag("team-a-data-1b4e28ba"), None);
        assert_eq!(tagged_remote_name(&obj(), None), "team-a-data-1b4e28ba");
    }

    #[test]
    fn an_operator_given_name_is_never_changed_for_another() {
        let untagged = "team-a-data-1b4e28ba";
        assert_eq!(kept_name(&obj(), None, untagged), Some(untagged));
        let tagged = "team-a-data-1b4e28ba-i0a0b0c";
        assert_eq!(kept_name(&obj(), None, tagged), Some(tagged));
        // A name the spec gives is the spec's; a foreign name is renamed.
        assert_eq!(kept_name(&obj(), Some("mine"), untagged), None);
        assert_eq!(kept_name(&obj(), None, "renamed-by-hand"), None);
    }

    #[test]
    fn an_object_keeps_the_name_its_remote_object_has() {
        let tag = InstallTag::from_uid("abcdef12").unwrap();
        let old = "team-a-data-1b4e28ba";
        assert_eq!(remote_name_of(&obj(), None, Some(old), Some(&tag)), old);
        // Not a name the operator gives it (a spec name since removed): the tagged name.
        assert_eq!(
            remote_name_of(&obj(), None, Some("renamed"), Some(&tag)),
            "team-a-data-1b4e28ba-iabcdef"
        );
        assert_eq!(
            remote_name_of(&obj(), None, None, Some(&tag)),
            "team-a-data-1b4e28ba-iabcdef"
        );
        // The spec's name wins over both.
        assert_eq!(
            remote_name_of(&obj(), Some("mine"), Some(old), Some(&tag)),
            "mine"
        );
    }
}
