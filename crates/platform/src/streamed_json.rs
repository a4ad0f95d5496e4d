//! Decoding a JSON answer while it arrives, for the listings of the account's objects: the
//! one kind of answer that grows with them.
//!
//! Read whole before it is decoded, a listing's text would be held beside what it decodes
//! to and freed right after, at every resync: a burst the allocator keeps resident until it
//! decays. Here the text passes through one small buffer into the decoder. serde_json reads
//! synchronously, so the decoder runs on a blocking thread, fed the response's chunks as
//! they come.
//!
//! A listing's items are also decoded straight into the vector the caller keeps, converted
//! one by one, in room reserved from the previous listing's length ([`Listing`]). Decoded as
//! a plain `Vec` and converted after, a listing would grow through a dozen doublings and
//! then be moved into a second vector, at every resync.

use std::fmt;
use std::io::{self, BufReader, Read};

use futures::TryStreamExt;
use serde::Deserialize;
use serde::de::{
    DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use tokio_util::io::{StreamReader, SyncIoBridge};

/// Reads `response`'s body, at most `limit` bytes of it, as `seed` decodes it (a
/// [`Listing`]). The outer error is a failure of the connection while the body arrived,
/// retried as any transport failure is; the inner one is the decoder's complaint about the
/// text.
pub(crate) async fn read_json<S, V>(
    response: reqwest::Response,
    limit: usize,
    seed: S,
) -> Result<Result<V, serde_json::Error>, reqwest::Error>
where
    S: for<'de> DeserializeSeed<'de, Value = V> + Send + 'static,
    V: Send + 'static,
{
    let chunks = response.bytes_stream().map_err(io::Error::other);
    let body = SyncIoBridge::new(StreamReader::new(chunks));
    let decoded = tokio::task::spawn_blocking(move || decode_at_most(body, limit, seed)).await;
    match decoded {
        Ok(Err(e)) if e.is_io() => match connection_failure(e) {
            Ok(transport) => Err(transport),
            Err(e) => Ok(Err(e)),
        },
        Ok(result) => Ok(result),
        // The decoder panicked, or the runtime is shutting down under it.
        Err(join) => Ok(Err(serde_json::Error::custom(format!(
            "the decoder did not finish: {join}"
        )))),
    }
}

/// Pure on its reader: decodes one JSON value from `body` with `seed`, refusing one longer
/// than `limit` bytes (by name, rather than as text that ends too soon).
fn decode_at_most<S, V>(body: impl Read, limit: usize, seed: S) -> Result<V, serde_json::Error>
where
    S: for<'de> DeserializeSeed<'de, Value = V>,
{
    let mut text = BufReader::new(body.take(limit as u64 + 1));
    let decoded = {
        let mut decoder = serde_json::Deserializer::from_reader(&mut text);
        seed.deserialize(&mut decoder)
            .and_then(|value| decoder.end().map(|()| value))
    };
    if text.get_ref().limit() == 0 {
        return Err(serde_json::Error::custom(format!(
            "the answer is longer than {limit} bytes"
        )));
    }
    decoded
}

/// How a listing answer, `{"<field>": [item, ...]}` (other fields ignored), is decoded: each
/// item as `T`, converted by `convert` at once, into a vector of `capacity` reserved before
/// the first (it grows as any vector past that).
pub(crate) struct Listing<T, U> {
    pub field: &'static str,
    pub capacity: usize,
    pub convert: fn(T) -> U,
}

impl<T, U> Clone for Listing<T, U> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T, U> Copy for Listing<T, U> {}

impl<'de, T: Deserialize<'de>, U> DeserializeSeed<'de> for Listing<T, U> {
    type Value = Vec<U>;

    fn deserialize<D: Deserializer<'de>>(self, decoder: D) -> Result<Vec<U>, D::Error> {
        decoder.deserialize_map(self)
    }
}

impl<'de, T: Deserialize<'de>, U> Visitor<'de> for Listing<T, U> {
    type Value = Vec<U>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "an object with the list `{}`", self.field)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<U>, A::Error> {
        let mut items = None;
        while let Some(key) = map.next_key::<String>()? {
            if key != self.field {
                map.next_value::<IgnoredAny>()?;
            } else if items.is_some() {
                return Err(A::Error::duplicate_field(self.field));
            } else {
                items = Some(map.next_value_seed(Items(self))?);
            }
        }
        items.ok_or_else(|| A::Error::missing_field(self.field))
    }
}

/// The array of a [`Listing`].
struct Items<T, U>(Listing<T, U>);

impl<'de, T: Deserialize<'de>, U> DeserializeSeed<'de> for Items<T, U> {
    type Value = Vec<U>;

    fn deserialize<D: Deserializer<'de>>(self, decoder: D) -> Result<Vec<U>, D::Error> {
        decoder.deserialize_seq(self)
    }
}

impl<'de, T: Deserialize<'de>, U> Visitor<'de> for Items<T, U> {
    type Value = Vec<U>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "the list `{}`", self.0.field)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<U>, A::Error> {
        let mut out = Vec::with_capacity(self.0.capacity);
        while let Some(item) = seq.next_element::<T>()? {
            out.push((self.0.convert)(item));
        }
        Ok(out)
    }
}

/// The transport's own error behind a decoder's I/O error, if it is one.
fn connection_failure(e: serde_json::Error) -> Result<reqwest::Error, serde_json::Error> {
    let io = io::Error::from(e);
    let kind = io.kind();
    match io
        .into_inner()
        .map(|inner| inner.downcast::<reqwest::Error>())
    {
        Some(Ok(transport)) => Ok(*transport),
        Some(Err(other)) => Err(serde_json::Error::io(io::Error::new(kind, other))),
        None => Err(serde_json::Error::io(kind.into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::marker::PhantomData;

    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Answer {
        items: Vec<u32>,
    }

    fn doubled(n: u32) -> u64 {
        u64::from(n) * 2
    }

    fn listing(capacity: usize) -> Listing<u32, u64> {
        Listing {
            field: "items",
            capacity,
            convert: doubled,
        }
    }

    /// A reader that hands out its text a few bytes at a time, as chunks arrive.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(self.0.len()).min(3);
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_value_arriving_in_pieces_decodes_whole() {
        let text = br#"{"items": [1, 2, 3, 40000]}"#;
        let decoded: Answer = decode_at_most(Trickle(text), text.len(), PhantomData).unwrap();
        assert_eq!(decoded.items, [1, 2, 3, 40000]);
    }

    #[test]
    fn an_answer_over_the_limit_is_refused_by_its_size() {
        let text = br#"{"items": [1, 2, 3, 40000]}"#;
        let e = decode_at_most(Trickle(text), text.len() - 1, PhantomData::<Answer>).unwrap_err();
        assert!(e.to_string().contains("longer than"), "{e}");
    }

    #[test]
    fn bad_text_is_the_decoders_complaint() {
        let text = br#"{"items": [1, "two"]}"#;
        let e = decode_at_most(Trickle(text), 1024, PhantomData::<Answer>).unwrap_err();
        assert!(e.is_data(), "{e}");
        let e =
            decode_at_most(Trickle(b"{\"items\": [1,"), 1024, PhantomData::<Answer>).unwrap_err();
        assert!(e.is_eof(), "{e}");
        let e = decode_at_most(Trickle(text), 1024, listing(4)).unwrap_err();
        assert!(e.is_data(), "{e}");
        assert!(e.to_string().contains("u32"), "{e}");
    }

    #[test]
    fn a_listing_converts_its_items_into_the_room_reserved() {
        let text = br#"{"next": null, "items": [1, 2, 3], "more": {"a": [1]}}"#;
        let items = decode_at_most(Trickle(text), 1024, listing(10)).unwrap();
        assert_eq!(items, [2, 4, 6]);
        assert_eq!(items.capacity(), 10, "reserved once, not grown");
        // Past the room reserved it grows as any vector.
        let items = decode_at_most(Trickle(text), 1024, listing(1)).unwrap();
        assert_eq!(items, [2, 4, 6]);
    }

    #[test]
    fn a_listing_without_its_field_or_with_it_twice_is_refused_by_name() {
        let e = decode_at_most(Trickle(br#"{"other": []}"#), 1024, listing(0)).unwrap_err();
        assert!(e.to_string().contains("missing field `items`"), "{e}");
        let twice = br#"{"items": [1], "items": [2]}"#;
        let e = decode_at_most(Trickle(twice), 1024, listing(0)).unwrap_err();
        assert!(e.to_string().contains("duplicate field `items`"), "{e}");
        let e = decode_at_most(Trickle(b"[1, 2]"), 1024, listing(0)).unwrap_err();
        assert!(
            e.to_string().contains("an object with the list `items`"),
            "{e}"
        );
        let trailing = br#"{"items": []} {}"#;
        assert!(decode_at_most(Trickle(trailing), 1024, listing(0)).is_err());
    }

    #[test]
    fn an_io_failure_not_of_the_connection_stays_the_decoders() {
        let other = serde_json::Error::io(io::Error::other("reset by peer"));
        let e = connection_failure(other).unwrap_err();
        assert!(e.to_string().contains("reset by peer"), "{e}");
    }
}
