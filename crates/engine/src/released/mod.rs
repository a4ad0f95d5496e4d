//! The record of remote objects released on purpose (`deletionPolicy: Orphan`, paused or
//! observe-only objects deleted), kept in the operator's namespace (the namespace of its
//! leader-election Lease): a key per released object (`pod.<id>`) whose value names the
//! object it belonged to. It outlives the namespaces of the objects, unlike anything kept
//! beside them, and the orphan sweep leaves what it names alone.
//!
//! Where an entry goes is decided in [`layout`] (pure): sharded ConfigMaps with overflow
//! parts, so that the record has no ceiling and a release is one write to a small object.
//! A release is one JSON merge patch that adds one key: it carries no resourceVersion,
//! so concurrent releases never conflict, and an entry once written is never removed.

pub mod layout;

use std::collections::HashMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use tracing::debug;

pub use layout::{LEGACY, Record, key_of};

/// What the record does with the ConfigMaps of the operator's namespace, and so what the
/// operator's Role there grants (`tests/manifests.rs` holds the Roles under `deploy/` to
/// it): a release is a merge `patch`, the first release into a part a `create`, and
/// [`read_record`] a `list`. Nothing is read by name (`get`) nor removed.
pub const CONFIG_MAP_VERBS: &[&str] = &["create", "list", "patch"];

/// Writes releases into the record of one namespace.
pub struct Writer {
    api: Api<ConfigMap>,
    field_manager: String,
    /// The part of each shard that new entries go to, learnt from the answers to earlier
    /// writes (a part reported full moves it on). Only a hint: after a restart it starts at
    /// the first part again, whose margin under the apiserver's limit still takes the
    /// entry, and a part refused as too large moves it on too; a wrong hint costs where an
    /// entry lands, never the entry.
    next_part: parking_lot::Mutex<HashMap<u8, u32>>,
}

impl Writer {
    /// The writer of the record kept in `namespace`, writing as `field_manager`.
    pub fn new(kube: kube::Client, namespace: &str, field_manager: &str) -> Self {
        Self {
            api: Api::namespaced(kube, namespace),
            field_manager: field_manager.to_string(),
            next_part: Default::default(),
        }
    }

    fn next_part(&self, shard: u8) -> u32 {
        self.next_part.lock().get(&shard).copied().unwrap_or(0)
    }

    fn move_on(&self, shard: u8, part: u32) {
        let mut next = self.next_part.lock();
        let at = next.entry(shard).or_insert(0);
        *at = (*at).max(part);
    }

    /// Records that `kind` `id` of object `owner` (`namespace/name`) was released on
    /// purpose: one write (a create the first time a part is used).
    pub async fn record(&self, kind: &str, id: &str, owner: &str) -> Result<(), kube::Error> {
        let key = key_of(kind, id);
        let shard = layout::shard_of(&key);
        let mut part = self.next_part(shard);
        loop {
            let name = layout::part_name(shard, part);
            match add_entry(&self.api, &self.field_manager, &name, &key, owner).await {
                Ok(bytes) => {
                    if layout::is_full(bytes) {
                        debug!(part = %name, bytes, "released record: part full, moving on");
                        self.move_on(shard, part + 1);
                    }
                    return Ok(());
                }
                Err(kube::Error::Api(e)) if layout::is_too_large(&e) => {
                    debug!(part = %name, "released record: part refused as too large, moving on");
                    part += 1;
                    self.move_on(shard, part);
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// Adds `key` → `owner` to the ConfigMap `name`, made if missing; the size of its data
/// afterwards, from the apiserver's answer.
async fn add_entry(
    api: &Api<ConfigMap>,
    field_manager: &str,
    name: &str,
    key: &str,
    owner: &str,
) -> Result<usize, kube::Error> {
    // The label rides on every write, so that a part whose label was lost is found again.
    let patch = json!({
        "metadata": {"labels": {layout::LABEL: layout::LABEL_VALUE}},
        "data": {key: owner},
    });
    let params = PatchParams {
        field_manager: Some(field_manager.to_string()),
        ..PatchParams::default()
    };
    let written = match api.patch(name, &params, &Patch::Merge(&patch)).await {
        Err(kube::Error::Api(e)) if e.code == 404 => {
            let mut config_map: ConfigMap =
                serde_json::from_value(patch.clone()).map_err(kube::Error::SerdeError)?;
            config_map.metadata.name = Some(name.to_string());
            let create = PostParams {
                field_manager: Some(field_manager.to_string()),
                ..PostParams::default()
            };
            match api.create(&create, &config_map).await {
                // Made by someone else in the meantime: add to it.
                Err(kube::Error::Api(e)) if e.code == 409 => {
                    api.patch(name, &params, &Patch::Merge(&patch)).await
                }
                other => other,
            }
        }
        other => other,
    }?;
    Ok(layout::data_bytes(&written))
}

/// ConfigMaps a page of the record's LIST holds at most: a part may be near 1 MiB.
const PAGE: u32 = 16;

/// The record kept in `namespace`: every part (one label-selected LIST, paged) and the
/// ConfigMap of earlier versions (a LIST by name). Listed rather than read by name: the
/// operator's roles let it list ConfigMaps, not get them.
pub async fn read_record(kube: &kube::Client, namespace: &str) -> Result<Record, kube::Error> {
    let api: Api<ConfigMap> = Api::namespaced(kube.clone(), namespace);
    let mut config_maps = Vec::new();
    let mut params = ListParams::default()
        .labels(&layout::selector())
        .limit(PAGE);
    loop {
        let page = api.list(&params).await?;
        config_maps.extend(page.items);
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => break,
        }
    }
    let legacy = ListParams::default().fields(&format!("metadata.name={LEGACY}"));
    config_maps.extend(api.list(&legacy).await?.items);
    Ok(Record::of(&config_maps))
}
