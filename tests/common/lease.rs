//! The install's Lease, as the end-to-end suites read it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;

use super::http::port_answer;
use super::operator::Env;

/// Who holds the test namespace's install Lease (`<namespace>/gpucloud-operator`), if
/// anyone.
pub async fn holder(env: &Env) -> Option<String> {
    let leases: Api<Lease> = env.api();
    leases
        .get_opt("gpucloud-operator")
        .await
        .unwrap()?
        .spec?
        .holder_identity
}

/// Whether the replica serving `/metrics` on loopback `port` says that it leads.
pub async fn leads(port: u16) -> bool {
    port_answer(port, "/metrics")
        .await
        .is_some_and(|(_, text)| text.lines().any(|l| l == "gpucloud_leader 1"))
}

/// Samples the leader gauges of the replicas on `ports` every 100 ms until finished, to
/// tell whether two ever led at once.
pub struct LeaderSampler {
    until: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<Sampled>,
}

/// What a [`LeaderSampler`] saw.
#[derive(Debug)]
pub struct Sampled {
    pub samples: usize,
    /// From the start to the last sample.
    pub lasted: Duration,
    /// When (since the start) more than one replica said it leads.
    pub several: Vec<Duration>,
}

impl Sampled {
    /// Whether it sampled at least once a second on average: a sampler starved by a
    /// loaded machine proves little about who led meanwhile.
    pub fn kept_up(&self) -> bool {
        self.samples as f64 >= self.lasted.as_secs_f64()
    }
}

impl LeaderSampler {
    pub fn start(ports: Vec<u16>) -> Self {
        let until = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn({
            let until = until.clone();
            async move {
                let started = Instant::now();
                let (mut samples, mut several) = (0, Vec::new());
                while !until.load(Ordering::SeqCst) {
                    let leading = futures::future::join_all(ports.iter().map(|p| leads(*p))).await;
                    samples += 1;
                    if leading.iter().filter(|l| **l).count() > 1 {
                        several.push(started.elapsed());
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Sampled {
                    samples,
                    lasted: started.elapsed(),
                    several,
                }
            }
        });
        Self { until, task }
    }

    pub async fn finish(self) -> Sampled {
        self.until.store(true, Ordering::SeqCst);
        self.task.await.unwrap()
    }
}
