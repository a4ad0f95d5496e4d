//! The form an object takes in the watch cache ([`crate::cache`]): its JSON compressed
//! against a dictionary shared by every object of its kind. A pass unpacks the object it
//! works on; nothing else keeps it whole.
//!
//! Why: the cache holds every watched object for as long as it exists, so its per-object
//! size is the operator's memory slope. A whole `NetworkVolume` as kube deserialises it
//! costs about 2.4 KiB: an `ObjectMeta` of sixteen optional fields, a B-tree node for one
//! or two annotations, the four conditions' words. The objects of one kind are alike (the
//! same keys, the same condition reasons and messages), so compressed against one of them
//! an object is the little that differs: names, ids, times.
//!
//! The dictionary of a kind is the first object of that kind this process packs with a
//! status (a status carries most of the repeated words). Until there is one, objects are
//! kept as plain JSON and packed again with their next change. The dictionary is kept for
//! the life of the process, so every packed object can always be read back.
//!
//! Unpacking costs a decompression and a JSON parse, about 10 µs for a volume: once per
//! pass, and when a Secret changes or the orphan census runs, once per object they read.

use std::any::TypeId;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::OnceLock;

use parking_lot::Mutex;
use thiserror::Error;

use gpucloud_crd::ManagedKind;

/// zstd's level for packing: the objects are small, and a higher level buys little on them.
const LEVEL: i32 = 3;

/// What the first byte of a packed body says the rest is.
const PLAIN: u8 = 0;
const COMPRESSED: u8 = 1;

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

impl<K: ManagedKind> Packed<K> {
    /// Packs `obj` with its kind's codec (see [`Codec::of`]).
    pub(crate) fn pack_with(codec: &'static Codec, obj: &K) -> Self {
        let json = serde_json::to_vec(obj).unwrap_or_default();
        if obj.current_status().is_some() {
            codec.offer_dictionary(&json);
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

/// One kind's dictionary and the zstd contexts that use it.
pub struct Codec {
    dictionary: OnceLock<Dictionary>,
    compressor: Mutex<Option<zstd::bulk::Compressor<'static>>>,
    decompressor: Mutex<Option<zstd::bulk::Decompressor<'static>>>,
}

struct Dictionary {
    encoder: zstd::dict::EncoderDictionary<'static>,
    decoder: zstd::dict::DecoderDictionary<'static>,
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
            dictionary: OnceLock::new(),
            compressor: Mutex::new(None),
            decompressor: Mutex::new(None),
        }
    }

    /// Makes `json` the dictionary, if there is none yet.
    fn offer_dictionary(&self, json: &[u8]) {
        if self.dictionary.get().is_none() {
            let _ = self.dictionary.set(Dictionary {
                encoder: zstd::dict::EncoderDictionary::copy(json, LEVEL),
                decoder: zstd::dict::DecoderDictionary::copy(json),
            });
        }
    }

    fn pack(&'static self, json: Vec<u8>) -> Box<[u8]> {
        let Some(dictionary) = self.dictionary.get() else {
            return plain(json);
        };
        let mut compressor = self.compressor.lock();
        if compressor.is_none() {
            *compressor =
                zstd::bulk::Compressor::with_prepared_dictionary(&dictionary.encoder).ok();
        }
        let Some(compressor) = compressor.as_mut() else {
            return plain(json);
        };
        match compressor.compress(&json) {
            Ok(compressed) if compressed.len() < json.len() => {
                let mut body = Vec::with_capacity(compressed.len() + 1);
                body.push(COMPRESSED);
                body.extend_from_slice(&compressed);
                body.into_boxed_slice()
            }
            _ => plain(json),
        }
    }

    fn unpack<'a>(&'static self, body: &'a [u8]) -> Result<Cow<'a, [u8]>, PackError> {
        match body.split_first() {
            None => Err(PackError::Empty),
            Some((&PLAIN, json)) => Ok(Cow::Borrowed(json)),
            Some((_, compressed)) => {
                // A compressed body exists only once the dictionary does.
                let dictionary = self.dictionary.get().ok_or(PackError::Empty)?;
                let mut decompressor = self.decompressor.lock();
                if decompressor.is_none() {
                    *decompressor = Some(zstd::bulk::Decompressor::with_prepared_dictionary(
                        &dictionary.decoder,
                    )?);
                }
                let decompressor = decompressor.as_mut().ok_or(PackError::Empty)?;
                let capacity = zstd::bulk::Decompressor::upper_bound(compressed)
                    .unwrap_or(compressed.len() * 32);
                Ok(Cow::Owned(decompressor.decompress(compressed, capacity)?))
            }
        }
    }
}

fn plain(json: Vec<u8>) -> Box<[u8]> {
    let mut body = Vec::with_capacity(json.len() + 1);
    body.push(PLAIN);
    body.extend_from_slice(&json);
    body.into_boxed_slice()
}

#[cfg(test)]
mod tests;
