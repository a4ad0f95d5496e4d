//! REST v1 container registry credentials: `GET,POST /v1/containerregistryauth`,
//! `GET,DELETE /v1/containerregistryauth/{id}`, over the same records as REST v2's
//! `/v2/registries`.
//!
//! The username and password are write-only: answers are `{id, name}`, and a refused body
//! names the field and the rule, never the value sent. Names are unique; a credential that
//! a pod or an endpoint pulls with cannot be deleted (400); templates that name it lose the
//! reference.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Map, Value};

use super::error::ApiError;
use super::ids;
use super::model::RegistryAuth;
use super::rest::V1Shown;
use super::state::{App, World};
use super::validate::{Fields, check, parse_object};

/// The document's `ContainerRegistryAuth`: never the credentials.
#[derive(Serialize)]
pub struct V1RegistryAuth<'a> {
    id: &'a str,
    name: &'a str,
}

impl V1Shown for RegistryAuth {
    fn v1(&self) -> impl Serialize + '_ {
        V1RegistryAuth {
            id: &self.id,
            name: &self.name,
        }
    }
}

/// Validates a `ContainerRegistryAuthCreateInput` against the world.
pub fn registry_auth_from_create(
    map: &Map<String, Value>,
    world: &World,
) -> Result<RegistryAuth, ApiError> {
    let mut f = Fields::new(map);
    let name = f.req_string("name");
    if let Some(n) = &name
        && world.registries.values().any(|r| &r.name == n)
    {
        f.fail(
            "name",
            format!("a container registry auth named {n:?} already exists"),
        );
    }
    // `Fields` names the field and the rule only, so a wrong value is never echoed.
    let username = f.req_string("username");
    let password = f.req_string("password");
    check(f.finish())?;
    Ok(RegistryAuth {
        id: ids::short(12),
        name: name.unwrap_or_default(),
        username: username.unwrap_or_default(),
        password: password.unwrap_or_default(),
    })
}

/// `POST /containerregistryauth`.
pub async fn create(
    State(app): State<App>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    app.keys
        .bearer(&headers)?
        .require_write("create container registry auths")?;
    let map = parse_object(&body, false)?;
    let mut world = app.world.lock();
    let r = registry_auth_from_create(&map, &world)?;
    world.registries.insert(r.id.clone(), r.clone());
    tracing::info!(registry = %r.id, "container registry credential created (v1)");
    Ok(Json(r.v1()).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::Fixtures;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn credentials_are_write_only_and_names_unique() {
        let mut w = World::from_fixtures(&Fixtures::built_in()).unwrap();
        let r = registry_auth_from_create(
            &map(json!({"name": "hub", "username": "me", "password": "hunter2-secret"})),
            &w,
        )
        .unwrap();
        let shown = serde_json::to_string(&r.v1()).unwrap();
        assert!(
            !shown.contains("hunter2-secret") && !shown.contains("\"me\""),
            "{shown}"
        );
        w.registries.insert(r.id.clone(), r);
        let dup = registry_auth_from_create(
            &map(json!({"name": "hub", "username": "a", "password": "b"})),
            &w,
        )
        .unwrap_err();
        assert_eq!(dup.status.as_u16(), 400);
        assert!(dup.detail.contains("name"), "{}", dup.detail);
        for body in [
            json!({"name": "x", "username": "a"}),
            json!({"name": "x", "username": "a", "password": 987654321}),
            json!({"name": "x", "username": "a", "password": "b", "url": "c"}),
        ] {
            let e = registry_auth_from_create(&map(body.clone()), &w).unwrap_err();
            assert_eq!(e.status.as_u16(), 400, "{body}");
            assert!(!e.detail.contains("987654321"), "{}", e.detail);
        }
    }
}
