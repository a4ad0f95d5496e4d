//! How the operator marks the remote objects it makes, and reads the marks back: the
//! deterministic name of an object the spec does not name, the tag a pod carries, and what
//! the orphan sweep sees of any remote object.

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

/// Pure: the UID prefix at the end of a name of the form `<namespace>-<name>-<8 hex>`
/// (see [`default_remote_name`]); `None` for any other name.
pub fn name_marker(name: &str) -> Option<Marker> {
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
}
