//! The job API of queue-based serverless endpoints: `{serverless}/{endpoint_id}/...`.

use std::time::{Duration, Instant};

use futures::Stream;
use reqwest::Method;
use url::Url;

use super::error::PlatformError;
use super::operation::Operation;
use super::transport::{Auth, Call, Transport};
use super::types::{Health, Job, JobHandle, JobRequest, PurgeResult, StreamBatch, StreamChunk};
use super::validate;

type Result<T> = std::result::Result<T, PlatformError>;

/// How [`Jobs::wait_for_completion`] and [`Jobs::stream`] poll.
#[derive(Clone, Debug, PartialEq)]
pub struct PollOptions {
    /// First pause between polls; doubles up to `max_interval` while nothing changes.
    pub interval: Duration,
    pub max_interval: Duration,
    /// Give up after this long (`None`: poll until the job ends).
    pub timeout: Option<Duration>,
}

impl Default for PollOptions {
    fn default() -> Self {
        Self {
            interval: Duration::from_millis(250),
            max_interval: Duration::from_secs(5),
            timeout: None,
        }
    }
}

/// Job API calls. Cheap to clone; obtained from [`super::PlatformClient::jobs`].
#[derive(Clone, Debug)]
pub struct Jobs {
    t: Transport,
}

impl Jobs {
    pub(crate) fn new(t: Transport) -> Self {
        Self { t }
    }

    fn url(&self, endpoint_id: &str, segments: &[&str]) -> Url {
        let mut url = self.t.urls().serverless.clone();
        {
            // A base is always http(s) (checked in config), so it has path segments.
            let mut path = url.path_segments_mut().expect("http(s) base URL");
            path.pop_if_empty().push(endpoint_id);
            for s in segments {
                path.push(s);
            }
        }
        url
    }

    fn call(&self, op: Operation, method: Method, endpoint_id: &str, segments: &[&str]) -> Call {
        Call::new(op, method, self.url(endpoint_id, segments), Auth::JobHeader)
            .limit_key(endpoint_id)
    }

    /// `POST /run`: queues a job; returns its id with status IN_QUEUE.
    ///
    /// Not retried after a 5xx or timeout (a second job could be queued); 429s are.
    pub async fn run(&self, endpoint_id: &str, request: &JobRequest) -> Result<JobHandle> {
        let op = Operation::JobRun;
        let call = self.submit_call(op, endpoint_id, request, validate::RUN_MAX_BYTES)?;
        self.t.send_json(&call).await
    }

    /// `POST /runsync?wait=`: runs a job and waits up to `wait` (default 90 s, 1..300 s) for
    /// it. A job still running when the wait ends comes back unfinished, with its id: use
    /// [`Jobs::wait_for_completion`] on it.
    pub async fn runsync(
        &self,
        endpoint_id: &str,
        request: &JobRequest,
        wait: Option<Duration>,
    ) -> Result<Job> {
        let op = Operation::JobRunSync;
        let mut call = self.submit_call(op, endpoint_id, request, validate::RUNSYNC_MAX_BYTES)?;
        let wait_for = wait.unwrap_or(Duration::from_secs(90));
        if let Some(w) = wait {
            validate::runsync_wait(w).map_err(|e| e.in_operation(op.name()))?;
            call.url
                .query_pairs_mut()
                .append_pair("wait", &w.as_millis().to_string());
        }
        let call = call.timeout(wait_for + self.t.shared.timeouts.runsync_margin);
        self.t.send_json(&call).await
    }

    fn submit_call(
        &self,
        op: Operation,
        endpoint_id: &str,
        request: &JobRequest,
        max_bytes: usize,
    ) -> Result<Call> {
        validate::id("endpointId", endpoint_id).map_err(|e| e.in_operation(op.name()))?;
        let segment = if op == Operation::JobRun {
            "run"
        } else {
            "runsync"
        };
        let call = self
            .call(op, Method::POST, endpoint_id, &[segment])
            .json_body(request)?;
        let len = call.body.as_ref().map_or(0, |b| b.len());
        validate::job_request(request, len, max_bytes).map_err(|e| e.in_operation(op.name()))?;
        Ok(call)
    }

    fn job_call(
        &self,
        op: Operation,
        method: Method,
        endpoint_id: &str,
        verb: &str,
        job_id: &str,
    ) -> Result<Call> {
        validate::id("endpointId", endpoint_id).map_err(|e| e.in_operation(op.name()))?;
        validate::id("jobId", job_id).map_err(|e| e.in_operation(op.name()))?;
        Ok(self.call(op, method, endpoint_id, &[verb, job_id]))
    }

    /// `GET /status/{job_id}`, optionally setting the job's TTL.
    pub async fn status(
        &self,
        endpoint_id: &str,
        job_id: &str,
        ttl: Option<Duration>,
    ) -> Result<Job> {
        let op = Operation::JobStatus;
        let mut call = self.job_call(op, Method::GET, endpoint_id, "status", job_id)?;
        if let Some(ttl) = ttl {
            validate::status_ttl(ttl).map_err(|e| e.in_operation(op.name()))?;
            call.url
                .query_pairs_mut()
                .append_pair("ttl", &ttl.as_millis().to_string());
        }
        self.t.send_json(&call).await
    }

    /// `GET /stream/{job_id}` once: the chunks produced since the last call.
    pub async fn stream_once(&self, endpoint_id: &str, job_id: &str) -> Result<StreamBatch> {
        let call = self.job_call(
            Operation::JobStream,
            Method::GET,
            endpoint_id,
            "stream",
            job_id,
        )?;
        self.t.send_json(&call).await
    }

    /// The job's streamed output as an async stream of chunks, pulled from `/stream` until the
    /// job has ended and nothing is left. An error ends the stream after being yielded. The
    /// job's final state is for [`Jobs::status`] to tell.
    pub fn stream(
        &self,
        endpoint_id: &str,
        job_id: &str,
        poll: PollOptions,
    ) -> impl Stream<Item = Result<StreamChunk>> + Send + 'static {
        let this = self.clone();
        let endpoint_id = endpoint_id.to_owned();
        let job_id = job_id.to_owned();
        async_stream::stream! {
            let started = Instant::now();
            let mut pause = poll.interval;
            loop {
                let batch = match this.stream_once(&endpoint_id, &job_id).await {
                    Ok(b) => b,
                    Err(e) => { yield Err(e); break; }
                };
                let got_chunks = !batch.chunks.is_empty();
                for chunk in batch.chunks {
                    yield Ok(chunk);
                }
                if got_chunks {
                    pause = poll.interval;
                    continue;
                }
                // Nothing new: has the job ended? The object form says so itself; the bare
                // array form needs a status call.
                let terminal = match batch.status {
                    Some(s) => s.is_terminal(),
                    None => match this.status(&endpoint_id, &job_id, None).await {
                        Ok(job) => job.status.is_terminal(),
                        Err(e) => { yield Err(e); break; }
                    },
                };
                if terminal {
                    break;
                }
                if poll.timeout.is_some_and(|t| started.elapsed() >= t) {
                    yield Err(poll_timeout(Operation::JobStream, poll.timeout));
                    break;
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(poll.max_interval);
            }
        }
    }

    /// `POST /cancel/{job_id}`. Safe to repeat.
    pub async fn cancel(&self, endpoint_id: &str, job_id: &str) -> Result<JobHandle> {
        let call = self.job_call(
            Operation::JobCancel,
            Method::POST,
            endpoint_id,
            "cancel",
            job_id,
        )?;
        self.t.send_json(&call).await
    }

    /// `POST /retry/{job_id}` of a FAILED or TIMED_OUT job.
    pub async fn retry(&self, endpoint_id: &str, job_id: &str) -> Result<JobHandle> {
        let call = self.job_call(
            Operation::JobRetry,
            Method::POST,
            endpoint_id,
            "retry",
            job_id,
        )?;
        self.t.send_json(&call).await
    }

    /// `POST /purge-queue`: removes queued jobs; running ones continue.
    pub async fn purge_queue(&self, endpoint_id: &str) -> Result<PurgeResult> {
        let op = Operation::JobPurgeQueue;
        validate::id("endpointId", endpoint_id).map_err(|e| e.in_operation(op.name()))?;
        self.t
            .send_json(&self.call(op, Method::POST, endpoint_id, &["purge-queue"]))
            .await
    }

    /// `GET /health`.
    pub async fn health(&self, endpoint_id: &str) -> Result<Health> {
        let op = Operation::JobHealth;
        validate::id("endpointId", endpoint_id).map_err(|e| e.in_operation(op.name()))?;
        self.t
            .send_json(&self.call(op, Method::GET, endpoint_id, &["health"]))
            .await
    }

    /// Polls `/status` until the job ends (COMPLETED, FAILED, CANCELLED, TIMED_OUT) and
    /// returns it; a timeout gives a transient error.
    pub async fn wait_for_completion(
        &self,
        endpoint_id: &str,
        job_id: &str,
        poll: PollOptions,
    ) -> Result<Job> {
        let started = Instant::now();
        let mut pause = poll.interval;
        let mut last_status = None;
        loop {
            let job = self.status(endpoint_id, job_id, None).await?;
            if job.status.is_terminal() {
                return Ok(job);
            }
            if last_status.as_ref() != Some(&job.status) {
                // Progress: poll briskly again.
                pause = poll.interval;
                last_status = Some(job.status.clone());
            }
            if let Some(limit) = poll.timeout {
                let left = limit.saturating_sub(started.elapsed());
                if left.is_zero() {
                    return Err(poll_timeout(Operation::JobStatus, poll.timeout));
                }
                pause = pause.min(left);
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(poll.max_interval);
        }
    }
}

fn poll_timeout(op: Operation, limit: Option<Duration>) -> PlatformError {
    PlatformError::Transient {
        operation: op.name(),
        status: None,
        detail: format!(
            "timeout: the job did not end within {:.1}s",
            limit.unwrap_or_default().as_secs_f64()
        ),
        maybe_applied: false,
    }
}
