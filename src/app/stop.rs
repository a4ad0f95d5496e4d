//! Waiting for the word to stop.

use tokio::sync::watch;

/// Resolves once `stop` is true, or once nobody can set it any more.
pub async fn stopped(mut stop: watch::Receiver<bool>) {
    // An error: the sender is gone, and with it whoever could have said it.
    let _ = stop.wait_for(|stop| *stop).await;
}
