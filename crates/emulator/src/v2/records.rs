//! The v2 handlers every keyed collection of the account shares: list, read one, delete one
//! nothing uses (see [`crate::collection`]). A route group names the record type,
//! as in `get(records::list::<NetworkVolume>)`.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::listing;
use super::problem::V2Result;
use super::request::{Caller, Writer};
use crate::collection::Keyed;
use crate::state::App;

/// A record as v2 shows it.
pub trait V2Shown: Keyed {
    /// The field of a list answer that holds the records (`networkVolumes`).
    const LIST_FIELD: &'static str;

    fn v2(&self) -> impl Serialize + '_;
}

/// `GET` of a whole collection: `{"<LIST_FIELD>": [...]}`, each record as `GET` of one
/// shows it. Only the pointers to the records are taken under the world's lock; the answer
/// is written after it is released, straight from the records' views, on the blocking pool.
pub async fn list<R: V2Shown>(State(app): State<App>, _caller: Caller) -> Response {
    listing::written_off_the_workers(move || {
        let records = (R::COLLECTION.records)(&app.world.lock()).shared();
        listing::list_json(Some(R::LIST_FIELD), &records, 128, |r, out| {
            serde_json::to_writer(out, &r.v2())
        })
    })
    .await
}

/// `GET` of one record.
pub async fn get_one<R: V2Shown>(
    State(app): State<App>,
    _caller: Caller,
    Path(id): Path<String>,
) -> V2Result<Response> {
    let world = app.world.lock();
    Ok(Json(R::COLLECTION.find(&world, &id)?.v2()).into_response())
}

/// `DELETE` of a record nothing uses any more.
pub async fn delete_unused<R: Keyed>(
    State(app): State<App>,
    Path(id): Path<String>,
    _writer: Writer,
) -> V2Result<StatusCode> {
    R::COLLECTION.delete_unused(&mut app.world.lock(), &id)?;
    Ok(StatusCode::NO_CONTENT)
}
