//! What a bearer token may do with `/metrics`, decided from the apiserver's two reviews:
//! the TokenReview says who the token is, the SubjectAccessReview whether that identity may
//! `get` the non-resource URL `/metrics`. The reviews are built and read here, without I/O.

use axum::http::StatusCode;
use k8s_openapi::api::authentication::v1::{
    TokenReview, TokenReviewSpec, TokenReviewStatus, UserInfo,
};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec, SubjectAccessReviewStatus,
};

/// The path the reviews ask about, as a ClusterRole's `nonResourceURLs` names it.
pub const METRICS_PATH: &str = "/metrics";

/// The answer to one token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The token's identity may get `/metrics`.
    Allowed,
    /// A valid token whose identity may not.
    Forbidden,
    /// No token, or one the apiserver does not accept.
    Unauthenticated,
}

impl Verdict {
    /// The HTTP status a refused request gets; `None` when the request goes on.
    pub fn refusal(self) -> Option<StatusCode> {
        match self {
            Verdict::Allowed => None,
            Verdict::Forbidden => Some(StatusCode::FORBIDDEN),
            Verdict::Unauthenticated => Some(StatusCode::UNAUTHORIZED),
        }
    }
}

/// The TokenReview of `token`, for the apiserver's own audiences (a ServiceAccount token
/// from the TokenRequest API, or a projected one, as Prometheus reads from its pod).
pub fn token_review(token: &str) -> TokenReview {
    TokenReview {
        spec: TokenReviewSpec {
            token: token.to_string(),
            audiences: None,
        },
        ..TokenReview::default()
    }
}

/// The identity the TokenReview found; `None` when the token is not authenticated, or the
/// answer says so badly (no status, no user): a guard fails closed.
pub fn reviewed_user(status: Option<&TokenReviewStatus>) -> Option<&UserInfo> {
    let status = status?;
    if status.authenticated != Some(true) {
        return None;
    }
    status.user.as_ref().filter(|user| user.username.is_some())
}

/// The SubjectAccessReview asking whether `user` may `get` `/metrics`: the identity exactly
/// as the TokenReview gave it (name, uid, groups, extra), since RBAC bindings may name any
/// of them.
pub fn access_review(user: &UserInfo) -> SubjectAccessReview {
    SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: user.username.clone(),
            uid: user.uid.clone(),
            groups: user.groups.clone(),
            extra: user.extra.clone(),
            non_resource_attributes: Some(NonResourceAttributes {
                path: Some(METRICS_PATH.to_string()),
                verb: Some("get".to_string()),
            }),
            resource_attributes: None,
        },
        ..SubjectAccessReview::default()
    }
}

/// The verdict of the SubjectAccessReview's answer on an authenticated token.
pub fn access_verdict(status: Option<&SubjectAccessReviewStatus>) -> Verdict {
    match status {
        Some(status) if status.allowed => Verdict::Allowed,
        _ => Verdict::Forbidden,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str) -> UserInfo {
        UserInfo {
            username: Some(name.into()),
            uid: Some("u-1".into()),
            groups: Some(vec![
                "system:serviceaccounts".into(),
                "system:authenticated".into(),
            ]),
            extra: Some(
                [(
                    "authentication.kubernetes.io/pod-name".to_string(),
                    vec!["p".to_string()],
                )]
                .into(),
            ),
        }
    }

    #[test]
    fn the_token_review_carries_the_token_for_the_apiservers_audiences() {
        let review = token_review("t0k3n");
        assert_eq!(review.spec.token, "t0k3n");
        assert_eq!(review.spec.audiences, None);
    }

    #[test]
    fn only_an_authenticated_review_with_a_user_names_an_identity() {
        let found = TokenReviewStatus {
            authenticated: Some(true),
            user: Some(user("system:serviceaccount:monitoring:prometheus")),
            ..TokenReviewStatus::default()
        };
        assert_eq!(
            reviewed_user(Some(&found)).and_then(|u| u.username.as_deref()),
            Some("system:serviceaccount:monitoring:prometheus")
        );
        let refused = TokenReviewStatus {
            authenticated: Some(false),
            error: Some("invalid bearer token".into()),
            ..TokenReviewStatus::default()
        };
        let unsaid = TokenReviewStatus::default();
        let nameless = TokenReviewStatus {
            authenticated: Some(true),
            user: Some(UserInfo::default()),
            ..TokenReviewStatus::default()
        };
        for status in [Some(&refused), Some(&unsaid), Some(&nameless), None] {
            assert!(reviewed_user(status).is_none(), "{status:?}");
        }
    }

    #[test]
    fn the_access_review_asks_for_get_on_metrics_as_the_whole_identity() {
        let who = user("system:serviceaccount:monitoring:prometheus");
        let spec = access_review(&who).spec;
        assert_eq!(spec.user, who.username);
        assert_eq!(spec.uid, who.uid);
        assert_eq!(spec.groups, who.groups);
        assert_eq!(spec.extra, who.extra);
        let asked = spec.non_resource_attributes.expect("a non-resource URL");
        assert_eq!(asked.path.as_deref(), Some("/metrics"));
        assert_eq!(asked.verb.as_deref(), Some("get"));
        assert!(spec.resource_attributes.is_none());
    }

    #[test]
    fn only_an_allowed_access_review_allows() {
        let allowed = SubjectAccessReviewStatus {
            allowed: true,
            ..SubjectAccessReviewStatus::default()
        };
        let denied = SubjectAccessReviewStatus {
            allowed: false,
            denied: Some(true),
            ..SubjectAccessReviewStatus::default()
        };
        let failed = SubjectAccessReviewStatus {
            allowed: false,
            evaluation_error: Some("webhook down".into()),
            ..SubjectAccessReviewStatus::default()
        };
        assert_eq!(access_verdict(Some(&allowed)), Verdict::Allowed);
        assert_eq!(access_verdict(Some(&denied)), Verdict::Forbidden);
        assert_eq!(access_verdict(Some(&failed)), Verdict::Forbidden);
        assert_eq!(access_verdict(None), Verdict::Forbidden);
    }

    #[test]
    fn a_refused_verdict_is_401_or_403() {
        assert_eq!(Verdict::Allowed.refusal(), None);
        assert_eq!(Verdict::Forbidden.refusal(), Some(StatusCode::FORBIDDEN));
        assert_eq!(
            Verdict::Unauthenticated.refusal(),
            Some(StatusCode::UNAUTHORIZED)
        );
    }
}
