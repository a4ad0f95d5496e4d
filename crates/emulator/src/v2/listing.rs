//! Writing the JSON of a long list answer (`{"pods": [...]}`, or v1's bare array), after
//! the world's lock is released.
//!
//! Lists of thousands of records are megabytes of JSON (10,000 pods are 7 MB), and writing
//! them is most of what such a call costs once the lock only copies pointers. The records
//! are written in two halves on two threads and the halves joined, into buffers sized for
//! the answer up front. The bytes are those of writing the list in one go: the items in
//! order, separated by commas.
//!
//! A list's whole answer (the snapshot under the lock, then the writing) runs on tokio's
//! blocking pool ([`written_off_the_workers`]): written on a runtime worker, a list of
//! 10,000 records held one of the machine's two workers for milliseconds, and a small call
//! queued behind it waited that long although the world's lock was free.

use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};

/// Below this many items a second thread costs more than it saves.
const SPLIT_AT: usize = 2_000;

/// `f` of every item, in order: in two halves on two threads when the list is long. For
/// the part of a list's snapshot that reads the world under its lock item by item (a
/// cluster's members and its primary's address), which then holds the lock half as long.
pub fn map_in_halves<T: Sync, U: Send>(items: &[T], f: impl Fn(&T) -> U + Sync) -> Vec<U> {
    if items.len() < SPLIT_AT {
        return items.iter().map(&f).collect();
    }
    let (first, second) = items.split_at(items.len() / 2);
    let f = &f;
    let (mut out, tail) = std::thread::scope(|s| {
        let tail = s.spawn(move || second.iter().map(f).collect::<Vec<U>>());
        let head: Vec<U> = first.iter().map(f).collect();
        (
            head,
            tail.join().expect("the mapping thread does not panic"),
        )
    });
    out.extend(tail);
    out
}

/// `{"<field>":[item,item,...]}` (`[item,item,...]` without a field) with each item
/// written by `write_item` (`|r, out| serde_json::to_writer(out, &r.v2())`);
/// `bytes_per_item` sizes the buffers.
pub fn list_json<T: Sync>(
    field: Option<&str>,
    items: &[T],
    bytes_per_item: usize,
    write_item: impl Fn(&T, &mut Vec<u8>) -> serde_json::Result<()> + Sync,
) -> Vec<u8> {
    match field {
        Some(field) => {
            let mut open = b"{".to_vec();
            serde_json::to_writer(&mut open, field).expect("a field name serialises");
            open.extend_from_slice(b":[");
            list_json_within(&open, b"]}", items, bytes_per_item, write_item)
        }
        None => list_json_within(b"[", b"]", items, bytes_per_item, write_item),
    }
}

/// `open`, the items separated by commas, `close`: a list inside a larger answer (`open`
/// ends with its `[`, `close` starts with its `]`), written as [`list_json`] writes one.
pub fn list_json_within<T: Sync>(
    open: &[u8],
    close: &[u8],
    items: &[T],
    bytes_per_item: usize,
    write_item: impl Fn(&T, &mut Vec<u8>) -> serde_json::Result<()> + Sync,
) -> Vec<u8> {
    let write = |part: &[T], out: &mut Vec<u8>| {
        for (i, item) in part.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_item(item, out).expect("a view serialises");
        }
    };
    let mut out = Vec::with_capacity(open.len() + close.len() + items.len() * bytes_per_item);
    out.extend_from_slice(open);
    if items.len() < SPLIT_AT {
        write(items, &mut out);
    } else {
        let (first, second) = items.split_at(items.len() / 2);
        let tail = std::thread::scope(|s| {
            let tail = s.spawn(|| {
                let mut tail = Vec::with_capacity(second.len() * bytes_per_item);
                write(second, &mut tail);
                tail
            });
            write(first, &mut out);
            tail.join().expect("the writing thread does not panic")
        });
        out.push(b',');
        out.extend_from_slice(&tail);
    }
    out.extend_from_slice(close);
    out
}

/// Runs `work` on tokio's blocking pool, so that the runtime's workers stay free for other
/// calls; a panic in it is the caller's panic, as if it had run in place.
pub async fn off_the_workers<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(work).await {
        Ok(value) => value,
        Err(err) => match err.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            // Only a runtime shutting down cancels a blocking task.
            Err(err) => panic!("a list's writing was cancelled: {err}"),
        },
    }
}

/// The JSON answer `write` builds (a snapshot and its writing), built on the blocking pool.
pub async fn written_off_the_workers(write: impl FnOnce() -> Vec<u8> + Send + 'static) -> Response {
    json_response(off_the_workers(write).await)
}

/// A JSON body as `axum::Json` answers it.
pub fn json_response(body: Vec<u8>) -> Response {
    ([(CONTENT_TYPE, "application/json")], body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_reads_as_if_written_in_one_go_however_long() {
        for n in [
            0,
            1,
            2,
            SPLIT_AT - 1,
            SPLIT_AT,
            SPLIT_AT + 1,
            2 * SPLIT_AT + 7,
        ] {
            let items: Vec<u32> = (0..n as u32).collect();
            let number = |i: &u32, out: &mut Vec<u8>| serde_json::to_writer(out, i);
            let written = list_json(Some("numbers"), &items, 4, number);
            let expected = serde_json::to_vec(&serde_json::json!({ "numbers": items })).unwrap();
            assert_eq!(written, expected, "{n} items");
            let bare = list_json(None, &items, 4, number);
            assert_eq!(bare, serde_json::to_vec(&items).unwrap(), "{n} items");
        }
    }

    #[test]
    fn a_map_in_halves_keeps_the_order_however_long() {
        for n in [0, 1, SPLIT_AT - 1, SPLIT_AT, 2 * SPLIT_AT + 3] {
            let items: Vec<u32> = (0..n as u32).collect();
            let doubled = map_in_halves(&items, |i| i * 2);
            assert_eq!(
                doubled,
                items.iter().map(|i| i * 2).collect::<Vec<_>>(),
                "{n} items"
            );
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_list_written_off_the_workers_leaves_the_runtime_free() {
        // One runtime thread: were the writing on it, the ticker could not run meanwhile.
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let ticker = tokio::spawn(async move {
            tokio::task::yield_now().await;
            tx.send(()).unwrap();
        });
        let answer = written_off_the_workers(move || {
            // Waits for the ticker, which runs only if this is not on the runtime's thread.
            rx.recv_timeout(std::time::Duration::from_secs(10))
                .expect("the runtime ran another task while the list was written");
            list_json(Some("n"), &[1u32, 2], 4, |i, out| {
                serde_json::to_writer(out, i)
            })
        })
        .await;
        ticker.await.unwrap();
        let body = axum::body::to_bytes(answer.into_body(), usize::MAX)
            .await
            .unwrap();
        assert_eq!(&body[..], br#"{"n":[1,2]}"#);
    }
}
