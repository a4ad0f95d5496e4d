//! Reading the operator's own HTTP port (`/metrics`, `/healthz`, `/readyz`) from a test.

use reqwest::StatusCode;

/// GETs `url`, with `token` as a bearer token when given, and returns the status and the
/// body. The operator's HTTPS certificate is self-signed, which this accepts, as
/// Prometheus's `insecureSkipVerify` does; plain HTTP works the same.
pub async fn get(url: &str, token: Option<&str>) -> (StatusCode, String) {
    let client = reqwest::Client::builder()
        .tls_danger_accept_invalid_certs(true)
        .build()
        .unwrap();
    let mut request = client.get(url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let answer = request
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let status = answer.status();
    (status, answer.text().await.unwrap_or_default())
}
