//! Outbound job webhooks: when a job reaches a final state, POST its `/status` body to the
//! job's URL; on failure or a non-200 answer, 2 more tries 10 s (emulated) apart.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde::Serialize;
use serde_json::Value;

use crate::clock::{Clock, Millis};

/// Tries per webhook: the first call and 2 retries.
pub const TRIES: u32 = 3;
/// Spacing between tries.
pub const RETRY_SPACING_MS: Millis = 10_000;
/// Attempts kept for inspection.
const LOG_LIMIT: usize = 1_000;

/// One delivery attempt, as shown by the admin state dump.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Attempt {
    pub job_id: String,
    pub url: String,
    pub try_number: u32,
    pub at: Millis,
    /// HTTP status, or `None` when the call failed.
    pub status: Option<u16>,
    pub error: Option<String>,
}

/// Sends webhooks and remembers what happened.
#[derive(Clone)]
pub struct Webhooks {
    clock: Clock,
    http: reqwest::Client,
    log: Arc<Mutex<VecDeque<Attempt>>>,
}

impl Webhooks {
    pub fn new(clock: Clock) -> Self {
        Self {
            clock,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()
                .expect("reqwest client"),
            log: Arc::default(),
        }
    }

    pub fn attempts(&self) -> Vec<Attempt> {
        self.log.lock().iter().cloned().collect()
    }

    pub fn clear(&self) {
        self.log.lock().clear();
    }

    /// Delivers in the background.
    pub fn send(&self, job_id: String, url: String, body: Value) {
        let this = self.clone();
        tokio::spawn(async move { this.deliver(job_id, url, body).await });
    }

    async fn deliver(&self, job_id: String, url: String, body: Value) {
        for try_number in 1..=TRIES {
            let result = self.http.post(&url).json(&body).send().await;
            let (status, error) = match result {
                Ok(resp) => (Some(resp.status().as_u16()), None),
                Err(err) => (None, Some(err.without_url().to_string())),
            };
            let ok = status == Some(200);
            tracing::debug!(job_id, try_number, ?status, "webhook attempt");
            self.record(Attempt {
                job_id: job_id.clone(),
                url: url.clone(),
                try_number,
                at: self.clock.now(),
                status,
                error,
            });
            if ok {
                return;
            }
            if try_number < TRIES {
                self.clock.sleep(RETRY_SPACING_MS).await;
            }
        }
        tracing::info!(job_id, "webhook gave up after {TRIES} tries");
    }

    fn record(&self, attempt: Attempt) {
        let mut log = self.log.lock();
        if log.len() >= LOG_LIMIT {
            log.pop_front();
        }
        log.push_back(attempt);
    }
}
