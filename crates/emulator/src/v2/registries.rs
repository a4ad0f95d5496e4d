//! REST v2 container registry credentials: `GET,POST /v2/registries`,
//! `GET,DELETE /v2/registries/{id}`.
//!
//! The username and password are write-only: answers show `{id, name}`, the state dump shows
//! no password, and neither appears in logs or errors. Names are unique (400). A credential
//! a pod or an endpoint pulls its image with cannot be deleted (400); templates that name it
//! lose the reference (`registry` becomes null).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use super::problem::{Problem, V2Result};
use super::records::{self, V2Shown};
use super::request::{Violations, WriteBody, parse_body};
use crate::ids;
use crate::model::RegistryAuth;
use crate::state::App;

pub fn routes() -> Router<App> {
    Router::new()
        .route(
            "/v2/registries",
            get(records::list::<RegistryAuth>).post(create),
        )
        .route(
            "/v2/registries/{id}",
            get(records::get_one::<RegistryAuth>).delete(records::delete_unused::<RegistryAuth>),
        )
}

/// The document's `Registry`: never the credentials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RegistryView<'a> {
    pub id: &'a str,
    pub name: &'a str,
}

impl V2Shown for RegistryAuth {
    const LIST_FIELD: &'static str = "registries";

    fn v2(&self) -> impl Serialize + '_ {
        RegistryView::from(self)
    }
}

impl<'a> From<&'a RegistryAuth> for RegistryView<'a> {
    fn from(r: &'a RegistryAuth) -> Self {
        Self {
            id: &r.id,
            name: &r.name,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateRegistry {
    name: String,
    username: String,
    password: String,
}

/// Validates a create and builds the credential.
pub fn registry_from_create(bytes: &[u8]) -> V2Result<RegistryAuth> {
    let body: CreateRegistry = parse_body(bytes).map_err(redact)?;
    let mut v = Violations::new();
    v.check(!body.name.is_empty(), "name", "must not be empty");
    v.check(!body.username.is_empty(), "username", "must not be empty");
    v.check(!body.password.is_empty(), "password", "must not be empty");
    // A taken name is no rule of the document (v1's surface, rest_registries.rs, refuses
    // one on its own).
    v.finish()?;
    Ok(RegistryAuth {
        id: ids::short(12),
        name: body.name,
        username: body.username,
        password: body.password,
    })
}

/// A 422 about a credential field names the field and the rule, never the value sent.
fn redact(mut p: Problem) -> Problem {
    for field in ["username", "password"] {
        let prefix = format!("{field}: ");
        if p.errors.iter().any(|e| e.starts_with(&prefix)) {
            for e in &mut p.errors {
                if e.starts_with(&prefix) && !e.ends_with(": required") {
                    *e = format!("{field}: must be a string");
                }
            }
            p.detail = format!("request validation failed: {}", p.errors.join("; "));
        }
    }
    p
}

async fn create(State(app): State<App>, WriteBody(body): WriteBody) -> V2Result<Response> {
    let mut world = app.world.lock();
    let r = registry_from_create(&body)?;
    world.registries.insert(r.id.clone(), r.clone());
    tracing::info!(registry = %r.id, "container registry credential created");
    Ok((StatusCode::CREATED, Json(RegistryView::from(&r))).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::Fixtures;
    use crate::state::World;

    #[test]
    fn credentials_are_write_only() {
        let mut w = World::from_fixtures(&Fixtures::built_in()).unwrap();
        let r =
            registry_from_create(br#"{"name":"hub","username":"me","password":"hunter2-secret"}"#)
                .unwrap();
        let shown = serde_json::to_string(&RegistryView::from(&r)).unwrap();
        assert!(!shown.contains("hunter2-secret") && !shown.contains("\"me\""));
        assert!(
            !serde_json::to_string(&r)
                .unwrap()
                .contains("hunter2-secret")
        );
        assert!(!format!("{r:?}").contains("hunter2-secret"));
        w.registries.insert(r.id.clone(), r);
        assert!(!w.dump().to_string().contains("hunter2-secret"));
        for body in [
            r#"{"name":"x","username":"a"}"#,
            r#"{"name":"x","username":"","password":"b"}"#,
            r#"{"name":"x","username":"a","password":"b","url":"c"}"#,
            r#"{"name":"x","username":"a","password":987654321}"#,
        ] {
            let p = registry_from_create(body.as_bytes()).unwrap_err();
            assert_eq!(p.status.as_u16(), 422, "{body}");
            // A refused body is never echoed, so a password cannot leak through an error.
            assert!(!p.detail.contains("\"b\"") && !p.detail.contains("987654321"));
            assert!(!p.errors.iter().any(|e| e.contains("987654321")));
        }
    }

    /// The document does not ask credential names to be unique: a second credential of a
    /// name is accepted (v1's surface still refuses it).
    #[test]
    fn a_name_another_credential_has_is_accepted() {
        let body = br#"{"name":"hub","username":"a","password":"b"}"#;
        let first = registry_from_create(body).unwrap();
        let second = registry_from_create(body).unwrap();
        assert_eq!(first.name, second.name);
        assert_ne!(first.id, second.id);
    }
}
