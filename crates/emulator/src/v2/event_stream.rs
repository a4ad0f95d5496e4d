//! The `text/event-stream` answer of the v2 log streams (a pod's logs, a serverless worker's
//! logs): the events as one body, with the headers that keep proxies from holding it back.

use axum::body::Body;
use axum::http::{HeaderValue, header};
use axum::response::Response;

/// `events` (already framed as `id:`/`data:` blocks) answered as an event stream.
pub fn answer(events: String) -> Response {
    let mut response = Response::new(Body::from(events));
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// An event stream that stays open: `chunks` (each one or more framed events) are sent as
/// they come, and the answer ends when the stream does.
pub fn answer_live<S>(chunks: S) -> Response
where
    S: futures::Stream<Item = String> + Send + 'static,
{
    use futures::StreamExt;
    let body = Body::from_stream(chunks.map(Ok::<_, std::convert::Infallible>));
    let mut response = answer(String::new());
    *response.body_mut() = body;
    response
}
