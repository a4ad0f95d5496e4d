//! What this process remembers of each object between its passes, and when it lets go: its
//! own writes until the watch brings them back (status, the metadata patches), the key last
//! read through each credentials reference, when it last changed a remote object, how many
//! passes failed in a row. All of it is in the object's record ([`super::records`]), and
//! goes when the object goes ([`Engine::forget`]).

use std::sync::Arc;
use std::time::Duration;

use kube::ResourceExt;
use tokio::time::Instant;

use gpucloud_crd::ManagedKind;

use super::Engine;
use super::own_writes::{self, version_order};
use crate::adapter::{Adapter, Plan, Policy, Report, Seen};
use crate::credentials::Credentials;

/// A credentials reference: namespace, Secret name and key.
pub(super) type SecretKeyRef = (String, String, String);

/// Whether an object read at `seen` (from the watch cache) predates a write of ours that
/// returned `written`. Versions that cannot be compared count as not behind, so the object
/// as seen is used.
fn seen_predates(seen: Option<&str>, written: &str) -> bool {
    seen.and_then(|seen| version_order(seen, written)) == Some(std::cmp::Ordering::Less)
}

/// Pure: `cached` if it is a newer version of the object than `obj`, else `obj`.
fn newer_of<K: ManagedKind>(obj: Arc<K>, cached: Option<K>) -> Arc<K> {
    match cached {
        Some(cached)
            if seen_predates(
                obj.resource_version().as_deref(),
                cached.resource_version().as_deref().unwrap_or_default(),
            ) =>
        {
            Arc::new(cached)
        }
        _ => obj,
    }
}

/// The object's credentials reference, as a key of `Engine::last_keys`.
fn key_ref<K: ManagedKind>(obj: &K) -> Option<SecretKeyRef> {
    obj.credentials().map(|c| {
        (
            obj.namespace().unwrap_or_default(),
            c.name.clone(),
            c.key.clone(),
        )
    })
}

/// The kind's pure calls, each with the kind's state of the object (`key`).
impl<A: Adapter> Engine<A> {
    pub(super) fn plan(
        &self,
        key: &str,
        obj: &A::Kind,
        desired: &A::Desired,
        remote: &A::Remote,
    ) -> Plan<A::Change> {
        self.records
            .read_state(key, |state| self.adapter.plan(obj, desired, remote, state))
    }

    pub(super) fn report_of(
        &self,
        key: &str,
        obj: &A::Kind,
        remote: Option<&A::Remote>,
        seen: Seen,
    ) -> Report<<A::Kind as ManagedKind>::Status> {
        self.records
            .read_state(key, |state| self.adapter.report(obj, remote, seen, state))
    }

    pub(super) fn policy(&self, key: &str, obj: &A::Kind, remote: Option<&A::Remote>) -> Policy {
        self.records
            .read_state(key, |state| self.adapter.policy(obj, remote, state))
    }
}

impl<A: Adapter> Engine<A> {
    /// Drops everything this engine and its kind keep about the object `key`: it is gone
    /// from the cluster. Its record is one removal; the ids it claimed go with it.
    pub fn forget(&self, key: &str) {
        if let Some(gone) = self.records.forget(key)
            && let Some(id) = gone.claimed_id
        {
            self.holders.lock().unclaim(&id, key);
        }
        self.resync.cancel(key);
        self.shared.metrics.set_ready(A::KIND, key, None);
        self.adapter.forget(key);
        self.tell_remembered();
    }

    /// Sets the gauges of what the engine keeps per object: its records, and the objects
    /// waiting for a resync.
    pub(super) fn tell_remembered(&self) {
        let metrics = &self.shared.metrics;
        metrics.set_remembered(A::KIND, self.records.len(), self.resync.len());
    }

    /// Whether `obj`, as the watch delivers it, is this process's own metadata patch coming
    /// back. The pass that wrote it has already decided what comes next; a pass for the echo
    /// (its finalizer and claim change the watch's hash) would only ask for a listing newer
    /// than the create, for every object created. The write goes with its echo.
    pub fn is_echo(&self, obj: &A::Kind) -> bool {
        let Some(version) = obj.resource_version() else {
            return false;
        };
        let key = obj.key();
        self.records.read(&key, |r| !r.own_writes.is_empty()) == Some(true)
            && self
                .records
                .update(&key, |r| own_writes::is_echo(&mut r.own_writes, &version))
    }

    /// Drops what this process keeps of its own writes of `obj` that the watch has now
    /// delivered: the versions of its metadata patches (see `own_writes::delivered`), and
    /// the status it last wrote once the cache holds that write or a later one (see
    /// [`crate::feed::Feed::on`]): from then on the cache has it. Kept until the object's
    /// next pass otherwise, a copy of the whole status of every object written lately would
    /// stay in memory for up to a poll interval.
    pub fn caught_up(&self, obj: &A::Kind) {
        let key = obj.key();
        let version = obj.resource_version();
        let keeps = self
            .records
            .read(&key, |r| !r.own_writes.is_empty() || r.own_status.is_some());
        if keeps != Some(true) {
            return;
        }
        self.records.update(&key, |r| {
            if let Some(version) = &version {
                own_writes::delivered(&mut r.own_writes, version);
            }
            if r.own_status
                .as_ref()
                .is_some_and(|own| !seen_predates(version.as_deref(), &own.0))
            {
                r.own_status = None;
            }
        });
    }

    /// The newest of `obj` this process knows: the newer of the copy the pass was started
    /// with (or the claim's write returned) and what the cache holds now, with the status
    /// this process last wrote if the watch has not delivered it yet. The pass read the
    /// cache when it started; the watch may have brought this process's status write
    /// meanwhile, and with it the engine let go of that status (see
    /// [`Engine::caught_up`]): from the older copy, a created object read as marked and
    /// without an id, and the pass adopted what its create had just made as if after an
    /// interrupted create.
    pub(super) fn newest(&self, obj: Arc<A::Kind>) -> Arc<A::Kind> {
        let cached = self.cache.get(&obj.key()).and_then(Result::ok);
        self.with_own_status(newer_of(obj, cached))
    }

    /// `obj` with the status this process last wrote, if the watch has not delivered that
    /// write yet.
    fn with_own_status(&self, obj: Arc<A::Kind>) -> Arc<A::Kind> {
        let key = obj.key();
        let seen = obj.resource_version();
        let own = self.records.read(&key, |r| {
            r.own_status.as_ref().map(|own| {
                let behind = seen_predates(seen.as_deref(), &own.0);
                (behind, behind.then(|| own.1.clone()))
            })
        });
        match own.flatten() {
            Some((true, Some(status))) => {
                let mut newer = (*obj).clone();
                *newer.status_mut() = Some(status);
                Arc::new(newer)
            }
            Some(_) => {
                self.records.update(&key, |r| r.own_status = None);
                obj
            }
            None => obj,
        }
    }

    /// Keeps the status this process wrote, at the version the write returned.
    pub(super) fn wrote_status(
        &self,
        obj: &A::Kind,
        version: String,
        status: <A::Kind as ManagedKind>::Status,
    ) {
        self.records.update(&obj.key(), |r| {
            r.own_status = Some(Box::new((version, status)))
        });
    }

    /// Keeps the version one of this process's metadata patches of `obj` returned.
    pub(super) fn wrote_metadata(&self, obj: &A::Kind, version: &str) {
        self.records
            .update(&obj.key(), |r| r.own_writes.push(version.into()));
    }

    /// One more failed pass of `key`: how long to wait before the next, at least
    /// `at_least` (a Retry-After the platform asked for).
    pub(super) fn failed(&self, key: &str, at_least: Option<Duration>) -> Duration {
        let failures = self.records.update(key, |r| {
            r.failures = r.failures.saturating_add(1);
            r.failures
        });
        self.backoff.delay_after(failures, at_least)
    }

    /// A pass of `key` worked: its backoff starts over.
    pub(super) fn succeeded(&self, key: &str) {
        if self.records.read(key, |r| r.failures > 0) == Some(true) {
            self.records.update(key, |r| r.failures = 0);
        }
    }

    /// Keeps `creds` as the last key read through the object's credentials reference.
    pub(super) fn remember_key(&self, obj: &A::Kind, creds: &Credentials) {
        let mut keys = self.last_keys.lock();
        let reference = key_ref(obj);
        if keys
            .get(&reference)
            .is_none_or(|k| k.account != creds.account)
        {
            keys.insert(reference, creds.clone());
        }
    }

    /// The key last read through the object's credentials reference, if any.
    pub(super) fn last_key(&self, obj: &A::Kind) -> Option<Credentials> {
        self.last_keys.lock().get(&key_ref(obj)).cloned()
    }

    /// Notes that this process just changed the object's remote object: the next pass
    /// needs a listing that started after it.
    pub(super) fn wrote(&self, obj: &A::Kind) {
        self.records.wrote(&obj.key(), Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_older_than_our_own_write_is_behind() {
        assert!(seen_predates(Some("100"), "105"));
        assert!(!seen_predates(Some("105"), "105"));
        assert!(!seen_predates(Some("110"), "105"));
        // Not comparable: use what the watch shows.
        assert!(!seen_predates(None, "105"));
        assert!(!seen_predates(Some("abc"), "105"));
        assert!(!seen_predates(Some("100"), "xyz"));
    }

    fn volume_at(version: &str, id: Option<&str>) -> gpucloud_crd::NetworkVolume {
        let mut nv: gpucloud_crd::NetworkVolume = serde_json::from_value(serde_json::json!({
            "apiVersion": gpucloud_crd::api_version(),
            "kind": "NetworkVolume",
            "metadata": {"name": "a", "namespace": "ns", "resourceVersion": version},
            "spec": {"sizeGb": 10, "dataCenterId": "EU-RO-1"},
        }))
        .unwrap();
        if let Some(id) = id {
            let mut status = gpucloud_crd::NetworkVolumeStatus::default();
            gpucloud_crd::NetworkVolume::common_mut(&mut status).id = Some(id.into());
            *nv.status_mut() = Some(status);
        }
        nv
    }

    fn id_of(nv: &gpucloud_crd::NetworkVolume) -> Option<&str> {
        nv.current_status()
            .and_then(|s| gpucloud_crd::NetworkVolume::common(s).id.as_deref())
    }

    #[test]
    fn a_pass_reads_the_newer_of_its_copy_and_the_caches() {
        // Started from the marker's echo; the cache has the status write with the id since.
        let started = Arc::new(volume_at("100", None));
        let newest = newer_of(started.clone(), Some(volume_at("105", Some("vol-1"))));
        assert_eq!(id_of(&newest), Some("vol-1"));
        // The claim's write answered with a version the watch has not brought yet.
        let claimed = Arc::new(volume_at("110", Some("vol-1")));
        let newest = newer_of(claimed.clone(), Some(volume_at("105", None)));
        assert!(Arc::ptr_eq(&newest, &claimed));
        // Deleted meanwhile, or not comparable: the pass keeps its copy.
        assert!(Arc::ptr_eq(&newer_of(started.clone(), None), &started));
        let odd = Some(volume_at("abc", Some("vol-1")));
        assert!(Arc::ptr_eq(&newer_of(started.clone(), odd), &started));
    }
}
