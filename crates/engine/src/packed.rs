//! The form an object takes in the watch cache ([`crate::cache`]): its JSON compressed
//! against a dictionary shared by every object of its kind. A pass unpacks the object it
//! works on; nothing else keeps it whole.
//!
//! Why: the cache holds every watched object for as long as it exists, so its per-object
//! size is the operator's memory slope. A whole object as kube deserialises it is an
//! `ObjectMeta` of sixteen optional fields, a B-tree node for one or two annotations and
//! the four conditions' words, many times its packed size. The objects of one kind are alike (the
//! same keys, the same condition reasons and messages), so compressed against one of them
//! an object is the little that differs: names, ids, times.
//!
//! The dictionary of a kind is the first object of that kind this process packs Ready (a
//! converged status carries most of the repeated words), and until then the first one
//! packed with any status (see [`Dictionaries`]). Until there is one, objects are kept as
//! plain JSON and packed again with their next change. Dictionaries are kept for the life
//! of the process, so every packed object can always be read back.
//!
//! Unpacking costs a decompression and a JSON parse: once per pass, and when a Secret
//! changes or the orphan census runs, once per object they read.

use std::any::TypeId;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::OnceLock;

use parking_lot::Mutex;
use thiserror::Error;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::conditions::{READY, find};
use gpucloud_crd::ManagedKind;
use gpucloud_crd::condition::Condition;

/// zstd's level for packing: the objects are small, and a higher level buys little on them.
const LEVEL: i32 = 3;

/// What the first byte of a packed body says the rest is: plain JSON, or compressed
/// against one of the kind's two dictionaries (see [`Dictionaries`]).
const PLAIN: u8 = 0;
const COMPRESSED: u8 = 1;
const COMPRESSED_READY: u8 = 2;

/// An object as the watch cache keeps it (see the module's doc): 16 bytes, plus its body.
pub struct Packed<K> {
    body: Box<[u8]>,
    kind: PhantomData<fn() -> K>,
}

/// A packed object that cannot be read back: a defect of this process, never of the object.
#[derive(Debug, Error)]
pub enum PackError {
    #[error("cannot compress or decompress a cached object: {0}")]
    Compression(#[from] std::io::Error),
    #[error("cannot read a cached object back: {0}")]
    Json(#[from] serde_json::Error),
    #[error("a cached object is empty")]
    Empty,
}

/// What an object offers its kind's dictionaries (see [`Dictionaries`]): nothing without a
/// status; with one, the dictionary of the first object packed with a status, and once
/// Ready, the Ready one too. The cache asks it of each object it packs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    NoStatus,
    WithStatus,
    Ready,
}

impl Shape {
    /// The shape of an object whose status carries `conditions` (`None`: no status).
    pub fn of_status(conditions: Option<&[Condition]>) -> Self {
        match conditions {
            None => Self::NoStatus,
            Some(conditions) => match find(conditions, READY) {
                Some(ready) if ready.status == "True" => Self::Ready,
                _ => Self::WithStatus,
            },
        }
    }

    /// The shape of a managed object: its status and the Ready condition of its common part.
    pub fn of_managed<K: ManagedKind>(obj: &K) -> Self {
        Self::of_status(
            obj.current_status()
                .map(|status| K::common(status).conditions.as_slice()),
        )
    }
}

impl<K: Serialize + DeserializeOwned> Packed<K> {
    /// Packs `obj`, whose [`Shape`] is `shape`, with its kind's codec (see [`Codec::of`]).
    pub(crate) fn pack_with(codec: &'static Codec, shape: Shape, obj: &K) -> Self {
        let json = serde_json::to_vec(obj).unwrap_or_default();
        if shape != Shape::NoStatus {
            codec.offer_dictionary(Dictionaries::AnyStatus, &json);
        }
        if shape == Shape::Ready {
            codec.offer_dictionary(Dictionaries::Ready, &json);
        }
        Self {
            body: codec.pack(json),
            kind: PhantomData,
        }
    }

    /// Reads the whole object back, with the codec it was packed with.
    pub(crate) fn unpack_with(&self, codec: &'static Codec) -> Result<K, PackError> {
        Ok(serde_json::from_slice(&codec.unpack(&self.body)?)?)
    }

    /// The size of the packed body in bytes (for tests and benchmarks).
    pub fn packed_len(&self) -> usize {
        self.body.len()
    }
}

impl<K> Clone for Packed<K> {
    fn clone(&self) -> Self {
        Self {
            body: self.body.clone(),
            kind: PhantomData,
        }
    }
}

impl<K> fmt::Debug for Packed<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Packed")
            .field("bytes", &self.body.len())
            .finish()
    }
}

/// A kind's two dictionaries (see [`Dictionaries`]) and the zstd contexts that use them.
pub struct Codec {
    slots: [Slot; 2],
}

/// Which object gives each of a kind's dictionaries. The first object packed with a status
/// may be one still being created, whose status has little in common with a converged one
/// (a converged object packs several times smaller against a Ready one), so a second
/// dictionary comes from the first object packed Ready, and is used from then on.
/// Bodies packed against the first stay readable: the tag byte says which was used.
#[derive(Clone, Copy)]
enum Dictionaries {
    /// The first object packed with a status (tag [`COMPRESSED`]).
    AnyStatus = 0,
    /// The first object packed with its Ready condition True (tag [`COMPRESSED_READY`]).
    Ready = 1,
}

/// One dictionary and its contexts.
struct Slot {
    dictionary: OnceLock<Dictionary>,
    compressor: Mutex<Option<zstd::bulk::Compressor<'static>>>,
    decompressor: Mutex<Option<zstd::bulk::Decompressor<'static>>>,
}

struct Dictionary {
    encoder: zstd::dict::EncoderDictionary<'static>,
    decoder: zstd::dict::DecoderDictionary<'static>,
}

impl Slot {
    fn new() -> Self {
        Self {
            dictionary: OnceLock::new(),
            compressor: Mutex::new(None),
            decompressor: Mutex::new(None),
        }
    }

    /// `json` compressed against this slot's dictionary, if it has one and that helps.
    fn compress(&'static self, json: &[u8]) -> Option<Vec<u8>> {
        let dictionary = self.dictionary.get()?;
        let mut compressor = self.compressor.lock();
        if compressor.is_none() {
            *compressor =
                zstd::bulk::Compressor::with_prepared_dictionary(&dictionary.encoder).ok();
        }
        let compressed = compressor.as_mut()?.compress(json).ok()?;
        (compressed.len() < json.len()).then_some(compressed)
    }

    fn decompress(&'static self, compressed: &[u8]) -> Result<Vec<u8>, PackError> {
        // A body compressed against a dictionary exists only once that dictionary does.
        let dictionary = self.dictionary.get().ok_or(PackError::Empty)?;
        let mut decompressor = self.decompressor.lock();
        if decompressor.is_none() {
            *decompressor = Some(zstd::bulk::Decompressor::with_prepared_dictionary(
                &dictionary.decoder,
            )?);
        }
        let decompressor = decompressor.as_mut().ok_or(PackError::Empty)?;
        let capacity =
            zstd::bulk::Decompressor::upper_bound(compressed).unwrap_or(compressed.len() * 32);
        Ok(decompressor.decompress(compressed, capacity)?)
    }
}

impl Codec {
    /// The codec of kind `K`, one per process (looked up once per cache, under a lock).
    pub(crate) fn of<K: 'static>() -> &'static Codec {
        static CODECS: OnceLock<Mutex<HashMap<TypeId, &'static Codec>>> = OnceLock::new();
        let mut codecs = CODECS.get_or_init(Default::default).lock();
        codecs
            .entry(TypeId::of::<K>())
            .or_insert_with(|| Box::leak(Box::new(Codec::new())))
    }

    fn new() -> Self {
        Self {
            slots: [Slot::new(), Slot::new()],
        }
    }

    /// Makes `json` the dictionary `which`, if there is none yet.
    fn offer_dictionary(&self, which: Dictionaries, json: &[u8]) {
        let slot = &self.slots[which as usize];
        if slot.dictionary.get().is_none() {
            let _ = slot.dictionary.set(Dictionary {
                encoder: zstd::dict::EncoderDictionary::copy(json, LEVEL),
                decoder: zstd::dict::DecoderDictionary::copy(json),
            });
        }
    }

    /// `json` against the best dictionary there is (the Ready one once it exists).
    fn pack(&'static self, json: Vec<u8>) -> Box<[u8]> {
        let packed = [
            (Dictionaries::Ready, COMPRESSED_READY),
            (Dictionaries::AnyStatus, COMPRESSED),
        ]
        .into_iter()
        .find(|(which, _)| self.slots[*which as usize].dictionary.get().is_some())
        .and_then(|(which, tag)| Some((tag, self.slots[which as usize].compress(&json)?)));
        match packed {
            Some((tag, compressed)) => tagged(tag, &compressed),
            None => tagged(PLAIN, &json),
        }
    }

    fn unpack<'a>(&'static self, body: &'a [u8]) -> Result<Cow<'a, [u8]>, PackError> {
        match body.split_first() {
            None => Err(PackError::Empty),
            Some((&PLAIN, json)) => Ok(Cow::Borrowed(json)),
            Some((&COMPRESSED, compressed)) => Ok(Cow::Owned(
                self.slots[Dictionaries::AnyStatus as usize].decompress(compressed)?,
            )),
            Some((_, compressed)) => Ok(Cow::Owned(
                self.slots[Dictionaries::Ready as usize].decompress(compressed)?,
            )),
        }
    }
}

fn tagged(tag: u8, bytes: &[u8]) -> Box<[u8]> {
    let mut body = Vec::with_capacity(bytes.len() + 1);
    body.push(tag);
    body.extend_from_slice(bytes);
    body.into_boxed_slice()
}

#[cfg(test)]
mod tests;
