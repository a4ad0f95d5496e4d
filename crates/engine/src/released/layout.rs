//! Pure: where an entry of the released record lives, and what the record says once read.
//!
//! An entry (`networkvolume.<id>` → `namespace/name` of the object it belonged to) lives in
//! one of [`SHARDS`] ConfigMaps chosen by a hash of its key, so that concurrent releases
//! spread over many small objects instead of queueing on one. A shard that nears the
//! apiserver's 1 MiB limit for a ConfigMap's data continues in overflow parts
//! (`gpucloud-released-<shard>-<n>`), so the record has no ceiling. Every part carries
//! [`LABEL`], so one label-selected LIST reads them all; the single ConfigMap of earlier
//! versions ([`LEGACY`]) is read beside them, so an upgrade forgets nothing.

use std::collections::{HashMap, HashSet};

use k8s_openapi::api::core::v1::ConfigMap;

/// The single ConfigMap earlier versions kept the whole record in; still read, never
/// written.
pub const LEGACY: &str = "gpucloud-released";
/// The label every part of the record carries (with [`LABEL_VALUE`]).
pub const LABEL: &str = "gpucloud.io/record";
pub const LABEL_VALUE: &str = "released";
/// How many shards the keys spread over (the first part of each is made on first use).
pub const SHARDS: usize = 256;
/// A part whose data has reached this many bytes takes no more new entries: the next go
/// to the following part. The apiserver refuses a ConfigMap whose values add up to more
/// than 1 MiB; the margin lets a writer that does not know yet that a part is
/// full (after a restart) still land its entry there.
pub const PART_FULL_BYTES: usize = 900 * 1024;
const _: () = assert!(PART_FULL_BYTES < 1024 * 1024, "under the apiserver's limit");

/// The label selector that finds every part of the record.
pub fn selector() -> String {
    format!("{LABEL}={LABEL_VALUE}")
}

/// The key of a released object (ConfigMap keys allow `[-._a-zA-Z0-9]`).
pub fn key_of(kind: &str, id: &str) -> String {
    format!("{}.{id}", kind.to_ascii_lowercase())
}

/// The shard of `key`: FNV-1a, folded to a byte. Fixed by this code rather than by the
/// standard library's hasher, whose output may change between Rust releases: a key must
/// map to the same shard in every version of the operator that writes it.
pub fn shard_of(key: &str) -> u8 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in key.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    (hash ^ (hash >> 8) ^ (hash >> 16) ^ (hash >> 24)) as u8
}

/// The name of part `part` of shard `shard`: the first part is `gpucloud-released-<xx>`,
/// the overflow ones `gpucloud-released-<xx>-<part>`.
pub fn part_name(shard: u8, part: u32) -> String {
    if part == 0 {
        format!("{LEGACY}-{shard:02x}")
    } else {
        format!("{LEGACY}-{shard:02x}-{part}")
    }
}

/// The shard and part a name of [`part_name`] stands for; `None` for any other name.
pub fn parse_part_name(name: &str) -> Option<(u8, u32)> {
    let rest = name.strip_prefix(LEGACY)?.strip_prefix('-')?;
    let (hex, part) = match rest.split_once('-') {
        Some((hex, part)) => {
            // `-0` or `-01` would be a second name for one part.
            if part.starts_with('0') {
                return None;
            }
            (hex, part.parse::<u32>().ok().filter(|p| *p > 0)?)
        }
        None => (rest, 0),
    };
    let lower_hex = |c: char| c.is_ascii_digit() || ('a'..='f').contains(&c);
    if hex.len() != 2 || !hex.chars().all(lower_hex) {
        return None;
    }
    Some((u8::from_str_radix(hex, 16).ok()?, part))
}

/// The bytes of a ConfigMap's data: its keys and values. The apiserver counts only the
/// values against its 1 MiB; the keys are counted here too, to stay clear of the limit
/// (and of etcd's on the whole object).
pub fn data_bytes(config_map: &ConfigMap) -> usize {
    let data: usize = config_map
        .data
        .iter()
        .flatten()
        .map(|(k, v)| k.len() + v.len())
        .sum();
    let binary: usize = config_map
        .binary_data
        .iter()
        .flatten()
        .map(|(k, v)| k.len() + v.0.len())
        .sum();
    data + binary
}

/// Whether a part of `bytes` takes no more new entries.
pub fn is_full(bytes: usize) -> bool {
    bytes >= PART_FULL_BYTES
}

/// Whether the apiserver refused a write because the object would be too large: 422
/// "Too long" for a ConfigMap's data over 1 MiB, 413 for a request body over its limit.
pub fn is_too_large(error: &kube::core::Status) -> bool {
    error.code == 413
        || (error.code == 422 && error.message.to_ascii_lowercase().contains("too long"))
}

/// The record as read: every entry of every part, and of the legacy ConfigMap.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Record {
    /// Entry key → the object it belonged to (`namespace/name`).
    entries: HashMap<String, String>,
    /// How many ConfigMaps it was read from.
    parts: usize,
}

impl Record {
    /// The record held by `config_maps`: the labelled parts and the legacy ConfigMap.
    /// Another ConfigMap among them (by name) is left out, so that a stray label cannot
    /// make someone's data count as released.
    pub fn of<'a>(config_maps: impl IntoIterator<Item = &'a ConfigMap>) -> Self {
        let mut record = Record::default();
        for config_map in config_maps {
            let name = config_map.metadata.name.as_deref().unwrap_or_default();
            if name != LEGACY && parse_part_name(name).is_none() {
                continue;
            }
            record.parts += 1;
            for (key, owner) in config_map.data.iter().flatten() {
                record.entries.insert(key.clone(), owner.clone());
            }
        }
        record
    }

    /// The ids of `kind` released on purpose.
    pub fn ids_of(&self, kind: &str) -> HashSet<String> {
        let prefix = format!("{}.", kind.to_ascii_lowercase());
        self.entries
            .keys()
            .filter_map(|k| k.strip_prefix(&prefix))
            .map(str::to_string)
            .collect()
    }

    /// The object `kind` `id` belonged to, if it was released on purpose.
    pub fn owner_of(&self, kind: &str, id: &str) -> Option<&str> {
        self.entries.get(&key_of(kind, id)).map(String::as_str)
    }

    /// How many entries, of every kind.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many ConfigMaps the record was read from.
    pub fn parts(&self) -> usize {
        self.parts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config_map(name: &str, data: serde_json::Value) -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": name}, "data": data})).unwrap()
    }

    #[test]
    fn keys_name_the_kind() {
        assert_eq!(key_of("Pod", "abc123"), "pod.abc123");
        assert_eq!(key_of("NetworkVolume", "v-1"), "networkvolume.v-1");
    }

    #[test]
    fn a_key_has_one_shard_for_good_and_keys_spread_over_all_of_them() {
        // One shard per key, whichever way the key is spelt out.
        assert_eq!(shard_of("pod.abc"), shard_of(&key_of("Pod", "abc")));
        let mut counts = [0u32; SHARDS];
        for i in 0..25_600 {
            counts[usize::from(shard_of(&key_of("NetworkVolume", &format!("v{i:07}"))))] += 1;
        }
        let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
        // 100 a shard on average; a fair hash keeps every shard well within 2x of that.
        assert!(*min >= 50 && *max <= 200, "shards from {min} to {max} keys");
    }

    #[test]
    fn the_hash_is_fnv_1a_folded_to_a_byte() {
        // FNV-1a 32 of "a" is 0xe40c292c; folded: e4 ^ 0c ^ 29 ^ 2c.
        assert_eq!(shard_of("a"), 0xe4 ^ 0x0c ^ 0x29 ^ 0x2c);
        // Of "" it is the offset basis 0x811c9dc5: 81 ^ 1c ^ 9d ^ c5 = c5.
        assert_eq!(shard_of(""), 0xc5);
    }

    #[test]
    fn parts_are_named_by_shard_then_overflow_number_and_read_back() {
        assert_eq!(part_name(0x0a, 0), "gpucloud-released-0a");
        assert_eq!(part_name(0xff, 0), "gpucloud-released-ff");
        assert_eq!(part_name(0x0a, 3), "gpucloud-released-0a-3");
        for (shard, part) in [(0u8, 0u32), (0x3c, 0), (0xff, 1), (7, 12)] {
            assert_eq!(
                parse_part_name(&part_name(shard, part)),
                Some((shard, part))
            );
        }
        for other in [
            LEGACY,
            "gpucloud-released-",
            "gpucloud-released-0A",
            "gpucloud-released-abc",
            "gpucloud-released-0a-0",
            "gpucloud-released-0a-01",
            "gpucloud-released-0a-x",
            "kube-root-ca.crt",
        ] {
            assert_eq!(parse_part_name(other), None, "{other}");
        }
    }

    #[test]
    fn a_part_is_full_near_the_apiservers_limit_counting_keys_and_values() {
        let cm = config_map("gpucloud-released-00", json!({"pod.abc": "ns/a"}));
        assert_eq!(data_bytes(&cm), "pod.abc".len() + "ns/a".len());
        assert!(!is_full(data_bytes(&cm)));
        assert!(is_full(PART_FULL_BYTES));
    }

    #[test]
    fn a_refusal_for_size_is_told_from_other_refusals() {
        let answer = |code: u16, message: &str| {
            kube::core::Status::failure(message, "Invalid").with_code(code)
        };
        // Older apiservers say "must have at most", newer ones "may not be more than".
        let older = "ConfigMap \"x\" is invalid: []: Too long: must have at most 1048576 bytes";
        let newer = "ConfigMap \"x\" is invalid: []: Too long: may not be more than 1048576 bytes";
        assert!(is_too_large(&answer(422, older)));
        assert!(is_too_large(&answer(422, newer)));
        assert!(is_too_large(&answer(413, "Request entity too large")));
        assert!(!is_too_large(&answer(
            422,
            "metadata.labels: Invalid value"
        )));
        assert!(!is_too_large(&answer(409, "conflict")));
    }

    #[test]
    fn the_record_is_every_part_and_the_legacy_config_map_and_nothing_else() {
        let legacy = config_map(
            LEGACY,
            json!({"pod.old": "ns/a", "networkvolume.v0": "ns/v"}),
        );
        let shard = config_map(&part_name(3, 0), json!({"pod.new": "ns/b"}));
        let overflow = config_map(&part_name(3, 1), json!({"networkvolume.v1": "ns/w"}));
        let stray = config_map("settings", json!({"pod.not-released": "ns/c"}));
        let record = Record::of([&legacy, &shard, &overflow, &stray]);
        assert_eq!(record.parts(), 3);
        assert_eq!(record.len(), 4);
        assert_eq!(
            record.ids_of("Pod"),
            ["old".to_string(), "new".to_string()].into()
        );
        assert_eq!(
            record.ids_of("NetworkVolume"),
            ["v0".to_string(), "v1".to_string()].into()
        );
        assert_eq!(record.owner_of("NetworkVolume", "v1"), Some("ns/w"));
        assert_eq!(record.owner_of("Pod", "not-released"), None);
        assert!(Record::of([]).ids_of("Pod").is_empty());
    }
}
