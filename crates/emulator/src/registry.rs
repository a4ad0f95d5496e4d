//! Registry delegations: `GET,POST /v2/registries/delegations`,
//! `GET,DELETE /v2/registries/delegations/{id}` (bearer auth).
//!
//! One path, two contracts. The seed's registry delegation API names the account and region
//! `cloudUser` and `cloudRegion`; REST v2's `EcrDelegation` requires `awsUser` and
//! `awsRegion` and allows other properties, so every delegation carries both pairs. The
//! rules are the seed's: 401 for a missing or wrong key, 403 for keys configured without
//! registry access (and for a read-only key's writes), 404 for an unknown id, and a 429
//! whose detail names the per-minute window. Errors are problem+json, and every answer to
//! an authenticated request carries `RateLimit` and `RateLimit-Policy` for that window.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use super::auth::Caller;
use super::error::ApiError;
use super::ids;
use super::model::Delegation;
use super::ratelimit::{Limited, Rule};
use super::state::App;
use super::v2::limits::{RATE_LIMIT, RATE_LIMIT_POLICY};
use super::v2::{Problem, V2Result, nullable, parse_body, timestamp};

const WINDOW_MS: u64 = 60_000;
const SCOPE: &str = "registry";
const OP: &str = "delegations";

/// A delegation in both contracts' names.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DelegationView<'a> {
    #[serde(flatten)]
    record: &'a Delegation,
    aws_user: &'a str,
    aws_region: &'a str,
}

impl<'a> From<&'a Delegation> for DelegationView<'a> {
    fn from(d: &'a Delegation) -> Self {
        Self {
            record: d,
            aws_user: &d.cloud_user,
            aws_region: &d.cloud_region,
        }
    }
}

/// What a call needs besides registry access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    Write,
}

/// Authenticates, applies the access and rate rules, serves, and labels the answer with the
/// window's state.
fn serve(
    app: &App,
    headers: &HeaderMap,
    access: Access,
    handle: impl FnOnce(&App) -> V2Result<Response>,
) -> Response {
    let caller = match app.keys.bearer(headers) {
        Ok(c) => c,
        Err(err) => return Problem::from(err).into_response(),
    };
    let mut response = admit(app, caller, access)
        .and_then(|()| handle(app))
        .unwrap_or_else(IntoResponse::into_response);
    label(app, caller, &mut response);
    response
}

fn admit(app: &App, caller: Caller, access: Access) -> V2Result<()> {
    let key = &app.config.api_keys[caller.key_index].key;
    if app.config.registry_forbidden_keys.iter().any(|k| k == key) {
        return Err(Problem::forbidden(
            "this API key has no access to container registry delegations",
        ));
    }
    if access == Access::Write {
        caller
            .require_write("change container registry delegations")
            .map_err(Problem::from)?;
    }
    let limit = u64::from(app.config.registry_requests_per_minute);
    let rule = Rule {
        rate: limit,
        window_ms: WINDOW_MS,
        concurrency: None,
    };
    match app
        .limiter
        .acquire(caller.key_index, SCOPE, OP, limit, rule)
    {
        Ok(_permit) => Ok(()),
        Err(limited) => {
            let retry_after_ms = match limited {
                Limited::Rate { retry_after_ms, .. } => retry_after_ms,
                Limited::Concurrency { .. } => 1_000,
            };
            Err(ApiError::too_many(
                format!(
                    "rate limit exceeded: at most {limit} registry requests per minute per API key; retry with exponential backoff"
                ),
                app.limiter.retry_after_secs(retry_after_ms),
            )
            .into())
        }
    }
}

/// `RateLimit` / `RateLimit-Policy` for the per-minute window.
fn label(app: &App, caller: Caller, response: &mut Response) {
    let limit = u64::from(app.config.registry_requests_per_minute);
    let (used, reset_ms) = app.limiter.usage(caller.key_index, SCOPE, OP, WINDOW_MS);
    let remaining = format!(
        "\"minute\";r={};t={}",
        limit.saturating_sub(used),
        app.limiter.retry_after_secs(reset_ms)
    );
    let policy = format!("\"minute\";q={limit};w={}", WINDOW_MS / 1000);
    let headers = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&remaining) {
        headers.insert(RATE_LIMIT, v);
    }
    if let Ok(v) = HeaderValue::from_str(&policy) {
        headers.insert(RATE_LIMIT_POLICY, v);
    }
}

fn not_found(id: &str) -> Problem {
    Problem::not_found(format!("registry delegation {id} not found"))
}

pub async fn list(State(app): State<App>, headers: HeaderMap) -> Response {
    // Admitted (and labelled) first; the listing is then built on the blocking pool.
    let mut response = serve(&app, &headers, Access::Read, |_| {
        Ok(StatusCode::OK.into_response())
    });
    if response.status() == StatusCode::OK {
        let listing =
            super::v2::listing::written_off_the_workers(move || delegations_listing(&app)).await;
        let (parts, body) = listing.into_parts();
        *response.body_mut() = body;
        response.headers_mut().extend(parts.headers);
    }
    response
}

/// The answer to the listing: `{"delegations": [...]}` in creation order. Only pointers are
/// copied under the world's lock. Each delegation goes through a `serde_json::Value`, whose
/// keys are in alphabetical order, as the listing has always answered.
pub fn delegations_listing(app: &App) -> Vec<u8> {
    let delegations = app.world.lock().delegations.clone();
    super::v2::listing::list_json(Some("delegations"), &delegations, 384, |d, out| {
        let value = serde_json::to_value(DelegationView::from(&**d))?;
        serde_json::to_writer(out, &value)
    })
}

pub async fn get(State(app): State<App>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    serve(&app, &headers, Access::Read, |app| {
        let world = app.world.lock();
        let d = world
            .delegations
            .iter()
            .find(|d| d.id == id)
            .ok_or_else(|| not_found(&id))?;
        Ok(Json(DelegationView::from(&**d)).into_response())
    })
}

/// `/v2/registries/delegations/{id}` takes `DELETE` (REST v2) and, as the seed emulator's
/// extra the document does not list, `GET`; a 405 advertises only the documented method.
pub async fn by_id_other_methods(
    state: State<App>,
    method: Method,
    headers: HeaderMap,
    id: Path<String>,
) -> Response {
    if method == Method::GET {
        return get(state, headers, id).await;
    }
    let mut response = Problem::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!(
            "{method} is not allowed on /v2/registries/delegations/{}",
            id.0
        ),
    )
    .into_response();
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("DELETE"));
    response
}

pub async fn create(State(app): State<App>, headers: HeaderMap, body: Bytes) -> Response {
    serve(&app, &headers, Access::Write, |app| {
        let now = timestamp(&app.clock, app.clock.now());
        let mut world = app.world.lock();
        let d = delegation_from_create(&body, &world.user_id, now)?;
        world.delegations.push(Arc::new(d.clone()));
        tracing::info!(delegation = %d.id, "registry delegation created");
        Ok((StatusCode::CREATED, Json(DelegationView::from(&d))).into_response())
    })
}

pub async fn delete(
    State(app): State<App>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    serve(&app, &headers, Access::Write, |app| {
        let mut world = app.world.lock();
        let before = world.delegations.len();
        world.delegations.retain(|d| d.id != id);
        if world.delegations.len() == before {
            return Err(not_found(&id));
        }
        Ok(StatusCode::NO_CONTENT.into_response())
    })
}

/// `CreateDelegationRequest`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateDelegation {
    resource: String,
    #[serde(default, deserialize_with = "nullable")]
    name: Option<Option<String>>,
}

/// An ECR repository ARN: `arn:aws:ecr:REGION:ACCOUNT:repository/NAME[:TAG]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepositoryArn {
    pub region: String,
    pub account: String,
    pub repository: String,
    pub tag: String,
}

impl RepositoryArn {
    pub fn parse(arn: &str) -> Option<Self> {
        let mut parts = arn.splitn(6, ':');
        let (Some("arn"), Some(partition), Some("ecr"), Some(region), Some(account), Some(rest)) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return None;
        };
        let name = rest.strip_prefix("repository/")?;
        let (repository, tag) = name.rsplit_once(':').unwrap_or((name, "latest"));
        let ok = partition.starts_with("aws")
            && !region.is_empty()
            && region
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && account.len() == 12
            && account.bytes().all(|b| b.is_ascii_digit())
            && !repository.is_empty()
            && !repository.starts_with('/')
            && !tag.is_empty();
        ok.then(|| Self {
            region: region.to_string(),
            account: account.to_string(),
            repository: repository.to_string(),
            tag: tag.to_string(),
        })
    }
}

/// Validates a create and builds the delegation (`created_at`: RFC 3339).
pub fn delegation_from_create(
    bytes: &[u8],
    user_id: &str,
    created_at: String,
) -> V2Result<Delegation> {
    let body: CreateDelegation = parse_body(bytes)?;
    let Some(arn) = RepositoryArn::parse(body.resource.trim()) else {
        return Err(Problem {
            errors: vec![
                "resource: must be an ECR repository ARN (arn:aws:ecr:REGION:ACCOUNT:repository/NAME)"
                    .into(),
            ],
            ..Problem::bad_request("resource is not an ECR repository ARN")
        });
    };
    Ok(Delegation {
        id: format!("dlg-{}", ids::short(10)),
        delegator_user_id: user_id.to_string(),
        docker_registry_uri: format!("{}.dkr.ecr.{}.amazonaws.com", arn.account, arn.region),
        name: body
            .name
            .flatten()
            .unwrap_or_else(|| arn.repository.clone()),
        cloud_user: arn.account,
        cloud_region: arn.region,
        repository: arn.repository,
        tag: arn.tag,
        created_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_listing_keeps_its_bytes_and_shows_a_new_delegation() {
        let app = crate::state::Emulator::new(crate::EmulatorConfig::default()).unwrap();
        // As it was built under the lock: one `Value` for the whole answer.
        let in_one_value = |app: &App| {
            let world = app.world.lock();
            let views: Vec<DelegationView> = world
                .delegations
                .iter()
                .map(|d| DelegationView::from(&**d))
                .collect();
            serde_json::to_vec(&serde_json::json!({ "delegations": views })).unwrap()
        };
        let before = delegations_listing(&app);
        assert_eq!(before, in_one_value(&app));
        let d = delegation_from_create(
            br#"{"resource":"arn:aws:ecr:us-east-2:418399314813:repository/new"}"#,
            "user_x",
            "2026-01-01T00:00:00Z".into(),
        )
        .unwrap();
        app.world.lock().delegations.push(Arc::new(d.clone()));
        let after = delegations_listing(&app);
        assert_eq!(after, in_one_value(&app));
        let v: serde_json::Value = serde_json::from_slice(&after).unwrap();
        let listed = v["delegations"].as_array().unwrap();
        // Creation order: the new one is last.
        assert_eq!(listed.last().unwrap()["id"], d.id.as_str());
        let was: serde_json::Value = serde_json::from_slice(&before).unwrap();
        assert_eq!(
            listed.len(),
            was["delegations"].as_array().unwrap().len() + 1
        );
    }

    #[test]
    fn parses_repository_arns() {
        let a =
            RepositoryArn::parse("arn:aws:ecr:us-east-2:418399314813:repository/runpod/deployment")
                .unwrap();
        assert_eq!(a.region, "us-east-2");
        assert_eq!(a.account, "418399314813");
        assert_eq!(a.repository, "runpod/deployment");
        assert_eq!(a.tag, "latest");
        let a =
            RepositoryArn::parse("arn:aws:ecr:eu-west-1:418399314813:repository/app:v2").unwrap();
        assert_eq!((a.repository.as_str(), a.tag.as_str()), ("app", "v2"));
        for bad in [
            "",
            "arn:aws:s3:::bucket",
            "arn:aws:ecr:us-east-2:12:repository/x",
            "arn:aws:ecr::418399314813:repository/x",
            "arn:aws:ecr:us-east-2:418399314813:image/x",
            "arn:aws:ecr:us-east-2:418399314813:repository/",
        ] {
            assert!(RepositoryArn::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn both_contracts_name_the_account_and_region() {
        let d = delegation_from_create(
            br#"{"resource":"arn:aws:ecr:us-east-2:418399314813:repository/team/app","name":null}"#,
            "user_1",
            "2026-06-01T12:00:00Z".into(),
        )
        .unwrap();
        let v = serde_json::to_value(DelegationView::from(&d)).unwrap();
        assert_eq!(v["awsUser"], "418399314813");
        assert_eq!(v["cloudUser"], "418399314813");
        assert_eq!(v["awsRegion"], "us-east-2");
        assert_eq!(v["cloudRegion"], "us-east-2");
        assert_eq!(v["name"], "team/app");
        assert_eq!(v["delegatorUserId"], "user_1");
        assert_eq!(
            v["dockerRegistryUri"],
            "418399314813.dkr.ecr.us-east-2.amazonaws.com"
        );
        let p = delegation_from_create(br#"{"resource":"nope"}"#, "u", String::new()).unwrap_err();
        assert_eq!(p.status.as_u16(), 400);
        let p = delegation_from_create(br#"{"name":"x"}"#, "u", String::new()).unwrap_err();
        assert_eq!(p.status.as_u16(), 422);
    }
}
