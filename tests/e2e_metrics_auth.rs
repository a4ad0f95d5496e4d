//! `/metrics` behind a token (`run --metrics-auth kubernetes`) against a real apiserver with
//! RBAC: the operator serves HTTPS with a self-signed certificate, and answers `/metrics`
//! with 401 without a token or with one the apiserver does not accept, 403 for a
//! ServiceAccount that may not get `/metrics`, and the metrics for one bound to the
//! `gpucloud-metrics-reader` ClusterRole of deploy/base/metrics-auth.yaml. The probes stay
//! open. Tokens come from the TokenRequest API, as a pod's would. Run through
//! `scripts/test.sh` (it needs `KUBECONFIG`).

mod common;

use std::time::Duration;

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Client};
use reqwest::StatusCode;
use serde_json::json;

use common::operator::{Env, apply_deploy_documents, free_port};
use common::wait_until;

const READER_ROLE: &str = "gpucloud-metrics-reader";
const TIMEOUT: Duration = Duration::from_secs(30);

/// The reader ClusterRole exactly as deploy/base/metrics-auth.yaml declares it.
async fn apply_reader_role(client: &Client) {
    let file = (
        "deploy/base/metrics-auth.yaml",
        include_str!("../deploy/base/metrics-auth.yaml"),
    );
    let applied = apply_deploy_documents(client, "default", file, &["ClusterRole"], 1).await;
    assert_eq!(applied, [READER_ROLE]);
}

/// A ServiceAccount in `namespace` and a token for it from the TokenRequest API.
async fn service_account_token(client: &Client, namespace: &str, name: &str) -> String {
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    let account: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    accounts
        .create(&PostParams::default(), &account)
        .await
        .expect("create the ServiceAccount");
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            audiences: None,
            expiration_seconds: Some(600),
            ..TokenRequestSpec::default()
        }),
        ..TokenRequest::default()
    };
    accounts
        .create_token_request(name, &PostParams::default(), &request)
        .await
        .expect("a token from the TokenRequest API")
        .status
        .and_then(|status| status.token)
        .expect("the TokenRequest's token")
}

/// Whether the apiserver says `user` may get `/metrics` now (an RBAC binding takes a moment
/// to be seen; the operator would remember an early "no" for a minute).
async fn may_get_metrics(client: &Client, user: &str) -> bool {
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(user.to_string()),
            groups: Some(vec!["system:serviceaccounts".into()]),
            non_resource_attributes: Some(NonResourceAttributes {
                path: Some("/metrics".into()),
                verb: Some("get".into()),
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    };
    let reviews: Api<SubjectAccessReview> = Api::all(client.clone());
    reviews
        .create(&PostParams::default(), &review)
        .await
        .ok()
        .and_then(|r| r.status)
        .is_some_and(|s| s.allowed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn metrics_answer_only_a_token_allowed_to_get_them() {
    let env = Env::start("metrics-auth").await;
    let ns = env.ns.name().to_string();
    apply_reader_role(&env.client).await;
    let stranger = service_account_token(&env.client, &ns, "stranger").await;
    let scraper = service_account_token(&env.client, &ns, "scraper").await;
    // Cluster-scoped, so named after the test's namespace and deleted at the end.
    let binding_name = format!("{ns}-metrics-reader");
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": binding_name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": READER_ROLE},
        "subjects": [{"kind": "ServiceAccount", "namespace": ns, "name": "scraper"}],
    }))
    .unwrap();
    let bindings: Api<ClusterRoleBinding> = Api::all(env.client.clone());
    bindings
        .create(&PostParams::default(), &binding)
        .await
        .expect("bind the reader role to the scraper");
    let scraper_user = format!("system:serviceaccount:{ns}:scraper");
    assert!(
        wait_until(TIMEOUT, || may_get_metrics(&env.client, &scraper_user)).await,
        "the apiserver never let the scraper get /metrics"
    );

    let port = free_port();
    let _operator = env.operator(&[
        &format!("--metrics-addr=127.0.0.1:{port}"),
        "--metrics-auth=kubernetes",
    ]);
    let base = format!("https://127.0.0.1:{port}");
    let ready = wait_until(TIMEOUT, || async {
        get_ok(&format!("{base}/readyz")).await
    })
    .await;
    assert!(
        ready,
        "/readyz never answered 200 over HTTPS without a token"
    );
    assert_eq!(
        common::http::get(&format!("{base}/healthz"), None).await.0,
        StatusCode::OK
    );

    let metrics = format!("{base}/metrics");
    assert!(
        reqwest::get(format!("http://127.0.0.1:{port}/metrics"))
            .await
            .is_err(),
        "plain HTTP gets no answer"
    );
    let (status, _) = common::http::get(&metrics, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "no token");
    let (status, _) = common::http::get(&metrics, Some("not-a-token")).await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "a token the apiserver refuses"
    );
    let (status, _) = common::http::get(&metrics, Some(&stranger)).await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "a ServiceAccount without the right"
    );
    for _ in 0..3 {
        let (status, text) = common::http::get(&metrics, Some(&scraper)).await;
        assert_eq!(status, StatusCode::OK, "the reader: {text}");
        assert!(
            text.contains("# TYPE gpucloud_leader gauge"),
            "the metrics text: {text}"
        );
    }

    bindings
        .delete(&binding_name, &DeleteParams::default())
        .await
        .expect("delete the binding");
}

async fn get_ok(url: &str) -> bool {
    let client = reqwest::Client::builder()
        .tls_danger_accept_invalid_certs(true)
        .build()
        .unwrap();
    matches!(client.get(url).send().await, Ok(a) if a.status() == StatusCode::OK)
}
