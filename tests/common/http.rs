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

/// The text of `/metrics` served on loopback `port`, `None` while it does not answer
/// with a success.
pub async fn metrics_text(port: u16) -> Option<String> {
    let url = format!("http://127.0.0.1:{port}/metrics");
    let answer = reqwest::get(url).await.ok()?.error_for_status().ok()?;
    answer.text().await.ok()
}

/// What the operator serving plain HTTP on loopback `port` answers on `path` (status and
/// body), or `None` when it does not answer: for replicas that come and go during a test.
pub async fn port_answer(port: u16, path: &str) -> Option<(u16, String)> {
    let answer = reqwest::get(format!("http://127.0.0.1:{port}{path}"))
        .await
        .ok()?;
    let status = answer.status().as_u16();
    Some((status, answer.text().await.unwrap_or_default()))
}
