//! What the long-running commands (`run`, `conversion-webhook`) need of their process: the
//! word to stop, and the namespace they run in.

/// Resolves when the process gets SIGTERM or Ctrl-C.
pub async fn termination() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("installing a SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

/// `given`, else the namespace of the pod this process runs in, else `default`.
pub fn own_namespace(given: Option<String>) -> String {
    given
        .or_else(|| {
            std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace").ok()
        })
        .map(|n| n.trim().to_string())
        .unwrap_or_else(|| "default".into())
}
