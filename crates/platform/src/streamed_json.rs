//! Decoding a JSON answer while it arrives, for the listings of the account's objects: the
//! one kind of answer that grows with them.
//!
//! Read whole before it was decoded, a listing's text (1.1 MB at 10,000 volumes, ten times
//! that at 100,000) was held beside what it decodes to and freed right after, at every
//! resync: a burst the allocator keeps resident until it decays. Here the text passes
//! through one small buffer into the decoder. serde_json reads synchronously, so the decoder
//! runs on a blocking thread, fed the response's chunks as they come.

use std::io::{self, BufReader, Read};

use futures::TryStreamExt;
use serde::de::{DeserializeOwned, Error as _};
use tokio_util::io::{StreamReader, SyncIoBridge};

/// Reads and decodes `response`'s body, at most `limit` bytes of it. The outer error is a
/// failure of the connection while the body arrived, retried as any transport failure is;
/// the inner one is the decoder's complaint about the text.
pub(crate) async fn read_json<T>(
    response: reqwest::Response,
    limit: usize,
) -> Result<Result<T, serde_json::Error>, reqwest::Error>
where
    T: DeserializeOwned + Send + 'static,
{
    let chunks = response.bytes_stream().map_err(io::Error::other);
    let body = SyncIoBridge::new(StreamReader::new(chunks));
    let decoded = tokio::task::spawn_blocking(move || decode_at_most(body, limit)).await;
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

/// Pure on its reader: decodes one JSON value from `body`, refusing one longer than
/// `limit` bytes (by name, rather than as text that ends too soon).
fn decode_at_most<T: DeserializeOwned>(
    body: impl Read,
    limit: usize,
) -> Result<T, serde_json::Error> {
    let mut text = BufReader::new(body.take(limit as u64 + 1));
    let decoded = serde_json::from_reader(&mut text);
    if text.get_ref().limit() == 0 {
        return Err(serde_json::Error::custom(format!(
            "the answer is longer than {limit} bytes"
        )));
    }
    decoded
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

    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Listing {
        items: Vec<u32>,
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
        let decoded: Listing = decode_at_most(Trickle(text), text.len()).unwrap();
        assert_eq!(decoded.items, [1, 2, 3, 40000]);
    }

    #[test]
    fn an_answer_over_the_limit_is_refused_by_its_size() {
        let text = br#"{"items": [1, 2, 3, 40000]}"#;
        let e = decode_at_most::<Listing>(Trickle(text), text.len() - 1).unwrap_err();
        assert!(e.to_string().contains("longer than"), "{e}");
    }

    #[test]
    fn bad_text_is_the_decoders_complaint() {
        let text = br#"{"items": [1, "two"]}"#;
        let e = decode_at_most::<Listing>(Trickle(text), 1024).unwrap_err();
        assert!(e.is_data(), "{e}");
        let e = decode_at_most::<Listing>(Trickle(b"{\"items\": [1,"), 1024).unwrap_err();
        assert!(e.is_eof(), "{e}");
    }

    #[test]
    fn an_io_failure_not_of_the_connection_stays_the_decoders() {
        let other = serde_json::Error::io(io::Error::other("reset by peer"));
        let e = connection_failure(other).unwrap_err();
        assert!(e.to_string().contains("reset by peer"), "{e}");
    }
}
