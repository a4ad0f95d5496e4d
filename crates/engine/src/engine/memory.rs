//! What this process remembers of each object between its passes, and when it lets go: its
//! own writes until the watch brings them back (status, the metadata patches), the key last
//! read through each credentials reference, when it last changed a remote object. All of it
//! goes when the object goes ([`Engine::forget`]).

use std::collections::HashMap;
use std::sync::Arc;

use kube::ResourceExt;
use tokio::time::Instant;

use gpucloud_crd::ManagedKind;

use super::Engine;
use crate::adapter::Adapter;
use crate::credentials::Credentials;

/// A credentials reference: namespace, Secret name and key.
pub(super) type SecretKeyRef = (String, String, String);

/// How two resourceVersions of one object are ordered. They are etcd revisions, comparable
/// as integers (Kubernetes 1.35 made that a guarantee); anything else is not compared.
pub(super) fn version_order(a: &str, b: &str) -> Option<std::cmp::Ordering> {
    Some(a.parse::<u64>().ok()?.cmp(&b.parse::<u64>().ok()?))
}

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

/// Removes `key`'s entry from the table of statuses this process wrote, and gives back
/// the room a burst of writes left once the table is mostly empty. Every path that removes
/// an entry comes here, so that none of them leaves the table at its burst size.
fn let_go_of<V>(own: &mut HashMap<String, V>, key: &str) {
    own.remove(key);
    crate::shrink_after_burst(own);
}

impl<A: Adapter> Engine<A> {
    /// Drops everything this engine and its adapter keep about the object `key`: it is
    /// gone from the cluster.
    pub fn forget(&self, key: &str) {
        self.last_write.lock().forget(key);
        self.unsure_creates.lock().remove(key);
        self.refused_creates.lock().remove(key);
        let_go_of(&mut self.own_status.lock(), key);
        self.told_claimed.lock().remove(key);
        self.holders.lock().forget(key);
        self.own_writes.lock().forget(key);
        self.backoffs.succeed(&key.to_string());
        self.resync.cancel(key);
        self.shared.metrics.set_ready(A::KIND, key, None);
        self.adapter.forget(key);
    }

    /// Whether `obj`, as the watch delivers it, is this process's own metadata patch coming
    /// back. The pass that wrote it has already decided what comes next; a pass for the echo
    /// (its finalizer and claim change the watch's hash) would only ask for a listing newer
    /// than the create, for every object created: while 10,000 volumes were created, a
    /// listing of up to 10,000 volumes back to back. The entry goes with its echo.
    pub fn is_echo(&self, obj: &A::Kind) -> bool {
        let version = obj.resource_version();
        self.own_writes
            .lock()
            .is_echo(&obj.key(), version.as_deref())
    }

    /// Drops what this process keeps of its own writes of `obj` that the watch has now
    /// delivered: the versions of its metadata patches (see `OwnWrites::delivered`), and
    /// the status it last wrote once the cache holds that write or a later one (see
    /// [`crate::feed::Feed::on`]): from then on the cache has it. Kept until the object's
    /// next pass otherwise, a copy of the whole status of every object written lately would
    /// stay in memory for up to a poll interval.
    pub fn caught_up(&self, obj: &A::Kind) {
        let key = obj.key();
        if let Some(version) = obj.resource_version() {
            self.own_writes.lock().delivered(&key, &version);
        }
        let mut own = self.own_status.lock();
        if own
            .get(&key)
            .is_some_and(|(written, _)| !seen_predates(obj.resource_version().as_deref(), written))
        {
            let_go_of(&mut own, &key);
        }
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
        let mut own = self.own_status.lock();
        match own.get(&key) {
            Some((written, status))
                if seen_predates(obj.resource_version().as_deref(), written) =>
            {
                let mut newer = (*obj).clone();
                *newer.status_mut() = Some(status.clone());
                Arc::new(newer)
            }
            Some(_) => {
                let_go_of(&mut own, &key);
                obj
            }
            None => obj,
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
        self.last_write.lock().record(obj.key(), Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letting_go_of_the_last_statuses_gives_the_room_back() {
        let mut own: HashMap<String, (String, u64)> = HashMap::new();
        for i in 0..10_000u64 {
            own.insert(format!("ns/vol-{i}"), (i.to_string(), i));
        }
        let burst = own.capacity();
        for i in 0..9_990u64 {
            let_go_of(&mut own, &format!("ns/vol-{i}"));
        }
        assert_eq!(own.len(), 10);
        assert!(
            own.capacity() < burst / 16,
            "{} of {burst} kept",
            own.capacity()
        );
        let_go_of(&mut own, "ns/vol-9995");
        assert!(own.contains_key("ns/vol-9999") && !own.contains_key("ns/vol-9995"));
    }

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
