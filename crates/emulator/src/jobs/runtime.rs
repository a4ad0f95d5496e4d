//! One serverless endpoint at run time: its jobs, its queue and its simulated workers.
//!
//! Everything about an endpoint's jobs sits behind one lock per endpoint, so endpoints never
//! contend with each other. Workers are tokio tasks: they take queued jobs, run the built-in
//! handler on the emulator's clock, and retire after the idle timeout.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::Notify;

use super::handler::{self, split_chunk};
use super::model::{ASYNC_RETENTION, Job, JobStatus, Submission, sync_retention};
use super::rollout::{self, WorkerSlot};
use super::webhook::Webhooks;
use crate::clock::{Clock, Millis};
use crate::error::ApiError;
use crate::ids;
use crate::start_failure::StartFailure;
use crate::workers::{WorkerSettings, should_retire, workers_to_start};

/// Why a job operation was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobError {
    #[error("job {0} not found (unknown, or removed by its TTL or after its retention period)")]
    NotFound(String),
    #[error("job {id} is {status}; {rule}")]
    WrongState {
        id: String,
        status: &'static str,
        rule: &'static str,
    },
}

impl From<JobError> for ApiError {
    fn from(err: JobError) -> Self {
        match &err {
            JobError::NotFound(_) => ApiError::not_found(err.to_string()),
            JobError::WrongState { .. } => ApiError::bad_request(err.to_string()),
        }
    }
}

#[derive(Debug, Default)]
struct Counters {
    completed: u64,
    failed: u64,
    retried: u64,
}

struct State {
    settings: WorkerSettings,
    jobs: HashMap<String, Job>,
    /// Queued jobs that trigger scaling, then lowPriority ones; normal jobs are served first.
    queue: VecDeque<String>,
    queue_low: VecDeque<String>,
    live: u32,
    busy: u32,
    closed: bool,
    counters: Counters,
    /// Every live worker by a key its task keeps for life (a replacement keeps the key).
    slots: BTreeMap<u64, WorkerSlot>,
    next_slot: u64,
    /// The endpoint's current configuration version.
    version: u64,
    /// When the machine behind each live slot started; a replacement keeps its slot and
    /// its machine time, so billing sees one span per slot from start to retirement.
    machine_since: BTreeMap<u64, Millis>,
    /// (start, end) of every retired slot's machine time.
    retired: Vec<(Millis, Millis)>,
    /// Why the workers' container never comes up (a test's rule on the endpoint's image or
    /// registry): they stay initializing and take no job while it is set.
    start_failure: Option<StartFailure>,
}

impl State {
    fn retire_machine(&mut self, key: u64, now: Millis) {
        if let Some(since) = self.machine_since.remove(&key) {
            self.retired.push((since, now));
        }
    }

    /// Replaces the stale workers whose time has come (see [`rollout`]).
    fn roll(&mut self, now: Millis) {
        rollout::replace_due(&mut self.slots, self.version, now, new_worker_id);
    }
}

fn new_worker_id() -> String {
    ids::short(12)
}

/// One endpoint's jobs and workers.
pub struct EndpointRuntime {
    pub endpoint_id: String,
    clock: Clock,
    webhooks: Webhooks,
    state: Mutex<State>,
    /// Wakes idle workers when work arrives or settings change.
    work: Notify,
}

/// A job handed to a worker.
struct Assignment {
    id: String,
    attempt: u32,
    input: Arc<Value>,
    wake: Arc<Notify>,
    started_at: Millis,
    execution_timeout_ms: u64,
}

/// The health report.
pub fn health_body(h: &Health) -> Value {
    json!({
        "jobs": {
            "completed": h.completed,
            "failed": h.failed,
            "inProgress": h.in_progress,
            "inQueue": h.in_queue,
            "retried": h.retried,
        },
        // The seed spec's health report has these two counts only: a worker that cannot
        // start is neither (the REST v2 workers list says `INITIALIZING`).
        "workers": { "idle": h.idle, "running": h.running },
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Health {
    pub completed: u64,
    pub failed: u64,
    pub retried: u64,
    pub in_progress: u64,
    pub in_queue: u64,
    pub idle: u32,
    pub running: u32,
}

impl EndpointRuntime {
    /// A runtime whose workers start on configuration `version`.
    pub fn new(
        endpoint_id: String,
        settings: WorkerSettings,
        version: u64,
        clock: Clock,
        webhooks: Webhooks,
    ) -> Arc<Self> {
        let rt = Arc::new(Self {
            endpoint_id,
            clock,
            webhooks,
            state: Mutex::new(State {
                settings,
                jobs: HashMap::new(),
                queue: VecDeque::new(),
                queue_low: VecDeque::new(),
                live: 0,
                busy: 0,
                closed: false,
                counters: Counters::default(),
                slots: BTreeMap::new(),
                next_slot: 0,
                machine_since: BTreeMap::new(),
                retired: Vec::new(),
                version,
                start_failure: None,
            }),
            work: Notify::new(),
        });
        rt.scale();
        rt
    }

    /// Applies new settings (endpoint update); workers follow at once.
    pub fn update_settings(self: &Arc<Self>, settings: WorkerSettings) {
        self.state.lock().settings = settings;
        self.work.notify_waiters();
        self.scale();
    }

    /// A new configuration version: workers on older ones are replaced one per
    /// `interval_ms`, oldest first.
    pub fn release(&self, version: u64, interval_ms: Millis) {
        let now = self.clock.now();
        let mut st = self.state.lock();
        st.roll(now);
        st.version = version;
        rollout::schedule(&mut st.slots, version, now, interval_ms);
    }

    /// The current version and the live workers, oldest first (the order a rollover
    /// replaces them in), after due replacements.
    pub fn workers(&self) -> (u64, Vec<WorkerSlot>) {
        let now = self.clock.now();
        let mut st = self.state.lock();
        st.roll(now);
        // Slots iterate by key; the stable sort keeps that order among equal start times,
        // as `rollout::schedule` does.
        let mut workers: Vec<WorkerSlot> = st.slots.values().cloned().collect();
        workers.sort_by_key(|w| w.started_at);
        (st.version, workers)
    }

    /// The machine time of every worker this endpoint has run, retired or live (up to
    /// now), as (start, end) on the emulator clock: what serverless billing charges.
    pub fn machine_spans(&self) -> Vec<(Millis, Millis)> {
        let now = self.clock.now();
        let st = self.state.lock();
        st.retired
            .iter()
            .copied()
            .chain(st.machine_since.values().map(|&since| (since, now)))
            .collect()
    }

    /// Stops every worker (endpoint deleted or emulator reset).
    pub fn close(&self) {
        let mut st = self.state.lock();
        st.closed = true;
        for job in st.jobs.values() {
            job.wake.notify_waiters();
            job.done.notify_waiters();
        }
        drop(st);
        self.work.notify_waiters();
    }

    /// Sets (or clears) why the workers cannot start; cleared, they take jobs at once.
    pub fn set_start_failure(&self, failure: Option<StartFailure>) {
        let mut st = self.state.lock();
        if st.start_failure == failure {
            return;
        }
        st.start_failure = failure;
        drop(st);
        self.work.notify_waiters();
    }

    pub fn start_failure(&self) -> Option<StartFailure> {
        self.state.lock().start_failure
    }

    /// Workers that are up (busy or idle): the dynamic rate-limit rule counts these.
    pub fn live_workers(&self) -> u32 {
        self.state.lock().live
    }

    /// Starts workers if the queue or `workersMin` asks for them.
    fn scale(self: &Arc<Self>) {
        let now = self.clock.now();
        let keys: Vec<u64> = {
            let mut st = self.state.lock();
            if st.closed {
                return;
            }
            let n = workers_to_start(st.live, st.busy, st.queue.len() as u32, &st.settings);
            st.live += n;
            (0..n)
                .map(|_| {
                    let key = st.next_slot;
                    st.next_slot += 1;
                    let slot = WorkerSlot::new(new_worker_id(), st.version, now);
                    st.slots.insert(key, slot);
                    st.machine_since.insert(key, now);
                    key
                })
                .collect()
        };
        for key in keys {
            let rt = Arc::clone(self);
            tokio::spawn(async move { rt.worker(key).await });
        }
    }

    /// Accepts a job: IN_QUEUE.
    pub fn submit(self: &Arc<Self>, sub: Submission, sync_wait: Option<u64>) -> Submitted {
        let now = self.clock.now();
        let retention = sync_wait.map_or(ASYNC_RETENTION, sync_retention);
        let id = ids::job();
        let low = sub.low_priority;
        let job = Job::new(id.clone(), sub, now, retention);
        let handle = Submitted {
            id: id.clone(),
            done: Arc::clone(&job.done),
        };
        {
            let mut st = self.state.lock();
            st.jobs.insert(id.clone(), job);
            if low {
                st.queue_low.push_back(id);
            } else {
                st.queue.push_back(id);
            }
        }
        self.work.notify_one();
        if !low {
            self.scale();
        }
        handle
    }

    /// The `/status` body; `ttl` (validated by the caller) resets the job's TTL.
    pub fn status(&self, id: &str, ttl: Option<u64>) -> Result<Value, JobError> {
        let now = self.clock.now();
        let mut st = self.state.lock();
        if let Some(ttl) = ttl
            && let Some(job) = st.jobs.get_mut(id)
        {
            job.ttl_ms = ttl;
            job.wake.notify_waiters();
        }
        let job = live_job(&mut st, id, now)?;
        Ok(job.status_body())
    }

    /// The final body if the job is final, else `{id, status}`.
    pub fn sync_result(&self, id: &str) -> Result<(bool, Value), JobError> {
        let now = self.clock.now();
        let mut st = self.state.lock();
        let job = live_job(&mut st, id, now)?;
        if job.status.is_final() {
            Ok((true, job.status_body()))
        } else {
            Ok((false, json!({"id": job.id, "status": job.status.as_str()})))
        }
    }

    /// Chunks produced since the last call, and the job's status.
    pub fn stream(&self, id: &str) -> Result<Value, JobError> {
        let now = self.clock.now();
        let mut st = self.state.lock();
        let job = live_job(&mut st, id, now)?;
        let chunks: Vec<Value> = job
            .chunks
            .drain(..)
            .map(|output| json!({ "output": output }))
            .collect();
        Ok(json!({"id": job.id, "status": job.status.as_str(), "stream": chunks}))
    }

    /// IN_QUEUE or IN_PROGRESS → CANCELLED.
    pub fn cancel(&self, id: &str) -> Result<Value, JobError> {
        let now = self.clock.now();
        let mut st = self.state.lock();
        let job = live_job(&mut st, id, now)?;
        let was = job.status;
        if was.is_final() {
            return Err(JobError::WrongState {
                id: id.into(),
                status: was.as_str(),
                rule: "only IN_QUEUE or IN_PROGRESS jobs can be cancelled",
            });
        }
        let webhook = finish(job, JobStatus::Cancelled, None, None, now);
        let body = json!({"id": id, "status": "CANCELLED"});
        if was == JobStatus::InQueue {
            st.queue.retain(|q| q != id);
            st.queue_low.retain(|q| q != id);
        }
        drop(st);
        if let Some((url, payload)) = webhook {
            self.webhooks.send(id.to_string(), url, payload);
        }
        Ok(body)
    }

    /// FAILED or TIMED_OUT → IN_QUEUE, same id, output removed.
    pub fn retry(self: &Arc<Self>, id: &str) -> Result<Value, JobError> {
        let now = self.clock.now();
        let low = {
            let mut st = self.state.lock();
            let job = live_job(&mut st, id, now)?;
            if !matches!(job.status, JobStatus::Failed | JobStatus::TimedOut) {
                return Err(JobError::WrongState {
                    id: id.into(),
                    status: job.status.as_str(),
                    rule: "only FAILED or TIMED_OUT jobs can be retried",
                });
            }
            job.status = JobStatus::InQueue;
            job.output = None;
            job.error = None;
            job.chunks.clear();
            job.started_at = None;
            job.finished_at = None;
            job.attempt += 1;
            // The TTL covers queue plus execution time of this new attempt.
            job.submitted_at = now;
            let low = job.low_priority;
            if low {
                st.queue_low.push_back(id.to_string());
            } else {
                st.queue.push_back(id.to_string());
            }
            st.counters.retried += 1;
            low
        };
        self.work.notify_one();
        if !low {
            self.scale();
        }
        Ok(json!({"id": id, "status": "IN_QUEUE"}))
    }

    /// Removes queued jobs; running jobs continue.
    pub fn purge(&self) -> usize {
        let mut guard = self.state.lock();
        let st = &mut *guard;
        let ids: Vec<String> = st.queue.drain(..).chain(st.queue_low.drain(..)).collect();
        let mut removed = 0;
        for id in ids {
            if st
                .jobs
                .get(&id)
                .is_some_and(|j| j.status == JobStatus::InQueue)
            {
                st.jobs.remove(&id);
                removed += 1;
            }
        }
        removed
    }

    pub fn health(&self) -> Health {
        let now = self.clock.now();
        let mut st = self.state.lock();
        sweep_locked(&mut st, now);
        let mut h = Health {
            completed: st.counters.completed,
            failed: st.counters.failed,
            retried: st.counters.retried,
            ..Health::default()
        };
        for job in st.jobs.values() {
            match job.status {
                JobStatus::InQueue => h.in_queue += 1,
                JobStatus::InProgress => h.in_progress += 1,
                _ => {}
            }
        }
        h.running = st.busy;
        // Workers whose container cannot start (a start failure rule) are up but never
        // ready: not idle.
        if st.start_failure.is_none() {
            h.idle = st.live.saturating_sub(st.busy);
        }
        h
    }

    /// Jobs of the endpoint, newest last: `{id, status}` each.
    pub fn list(&self) -> Vec<Value> {
        let now = self.clock.now();
        let mut st = self.state.lock();
        sweep_locked(&mut st, now);
        let mut jobs: Vec<&Job> = st.jobs.values().collect();
        jobs.sort_by_key(|j| j.submitted_at);
        jobs.iter()
            .map(|j| json!({"id": j.id, "status": j.status.as_str()}))
            .collect()
    }

    /// Drops jobs past their TTL or retention.
    pub fn sweep(&self) {
        let now = self.clock.now();
        sweep_locked(&mut self.state.lock(), now);
    }

    pub fn dump(&self) -> Value {
        let st = self.state.lock();
        let mut jobs: Vec<&Job> = st.jobs.values().collect();
        jobs.sort_by_key(|j| j.submitted_at);
        json!({
            "workers": {"live": st.live, "busy": st.busy},
            "version": st.version,
            "workerSlots": st.slots.values().map(|w| json!({
                "id": w.id, "version": w.version, "startedAt": w.started_at, "busy": w.busy,
                "replaceAt": w.replace_at,
            })).collect::<Vec<_>>(),
            "queued": st.queue.len() + st.queue_low.len(),
            "jobs": jobs.iter().map(|j| {
                let mut b = j.status_body();
                b["lowPriority"] = json!(j.low_priority);
                b["ttlMs"] = json!(j.ttl_ms);
                b
            }).collect::<Vec<_>>(),
        })
    }

    /// One worker's life; `key` names its slot in the worker table.
    async fn worker(self: Arc<Self>, key: u64) {
        loop {
            let work = self.work.notified();
            tokio::pin!(work);
            work.as_mut().enable();
            let now = self.clock.now();
            let (assignment, idle_deadline) = {
                let mut st = self.state.lock();
                if st.closed {
                    st.live -= 1;
                    st.slots.remove(&key);
                    st.retire_machine(key, now);
                    return;
                }
                st.roll(now);
                let idle_since = st.slots.get(&key).map_or(now, |w| w.idle_since);
                // A worker whose container cannot start takes no job and, never having
                // come up, is never idle either: it waits for the failure to clear.
                let blocked = st.start_failure.is_some();
                match if blocked {
                    None
                } else {
                    take_next(&mut st, now)
                } {
                    Some(a) => {
                        st.busy += 1;
                        if let Some(w) = st.slots.get_mut(&key) {
                            w.busy = true;
                        }
                        (Some(a), None)
                    }
                    None => {
                        if !blocked
                            && should_retire(st.live, now.saturating_sub(idle_since), &st.settings)
                        {
                            st.live -= 1;
                            st.slots.remove(&key);
                            st.retire_machine(key, now);
                            return;
                        }
                        // At or below workersMin a worker never retires: it only waits
                        // for work (or a settings change, which also notifies).
                        let deadline = if !blocked && st.live > st.settings.min {
                            Some(idle_since.saturating_add(st.settings.idle_timeout_ms))
                        } else {
                            None
                        };
                        (None, deadline)
                    }
                }
            };
            match assignment {
                Some(a) => {
                    self.run(a).await;
                    let now = self.clock.now();
                    let mut st = self.state.lock();
                    st.busy -= 1;
                    if let Some(w) = st.slots.get_mut(&key) {
                        w.busy = false;
                        w.idle_since = now;
                    }
                }
                None => match idle_deadline {
                    Some(deadline) => {
                        tokio::select! {
                            _ = &mut work => {}
                            _ = self.clock.sleep_until(deadline) => {}
                        }
                    }
                    None => work.await,
                },
            }
        }
    }

    /// Runs one job to its end (or until it is cancelled or deleted under the worker).
    async fn run(&self, a: Assignment) {
        let plan = handler::plan(&a.input);
        let work_end = a.started_at.saturating_add(plan.sleep_ms);
        let exec_deadline = a.started_at.saturating_add(a.execution_timeout_ms);
        let n = plan.stream.len() as u64;
        // Chunk i is released at an even share of the work time.
        let chunk_due = |i: u64| a.started_at + plan.sleep_ms * (i + 1) / n.max(1);
        let mut released = 0u64;
        loop {
            let wake = a.wake.notified();
            tokio::pin!(wake);
            wake.as_mut().enable();
            let now = self.clock.now();
            let next = {
                let mut st = self.state.lock();
                if st.closed {
                    return;
                }
                let Some(job) = st.jobs.get_mut(&a.id) else {
                    return;
                };
                if job.attempt != a.attempt || job.status != JobStatus::InProgress {
                    return;
                }
                if now >= job.ttl_deadline() {
                    st.jobs.remove(&a.id);
                    return;
                }
                while released < n && chunk_due(released) <= now.min(exec_deadline) {
                    job.chunks
                        .extend(split_chunk(plan.stream[released as usize].clone()));
                    released += 1;
                }
                let outcome = if now >= exec_deadline && exec_deadline <= work_end {
                    Some((
                        JobStatus::TimedOut,
                        None,
                        Some(format!(
                            "job timed out after {} ms (execution timeout)",
                            a.execution_timeout_ms
                        )),
                    ))
                } else if now >= work_end {
                    Some(match &plan.outcome {
                        Ok(output) => (JobStatus::Completed, Some(output.clone()), None),
                        Err(e) => (JobStatus::Failed, None, Some(e.clone())),
                    })
                } else {
                    None
                };
                if let Some((status, output, error)) = outcome {
                    if status == JobStatus::Completed
                        && n == 0
                        && let Some(out) = &output
                    {
                        // A handler without a stream still shows its output on /stream.
                        job.chunks.extend(split_chunk(out.clone()));
                    }
                    let webhook = finish(job, status, output, error, now);
                    match status {
                        JobStatus::Completed => st.counters.completed += 1,
                        _ => st.counters.failed += 1,
                    }
                    drop(st);
                    if let Some((url, payload)) = webhook {
                        self.webhooks.send(a.id.clone(), url, payload);
                    }
                    return;
                }
                let mut next = work_end.min(exec_deadline).min(job.ttl_deadline());
                if released < n {
                    next = next.min(chunk_due(released));
                }
                next
            };
            tokio::select! {
                _ = self.clock.sleep_until(next) => {}
                _ = &mut wake => {}
            }
        }
    }
}

/// Handle to a submitted job.
pub struct Submitted {
    pub id: String,
    pub done: Arc<Notify>,
}

/// Looks a job up, deleting it first if its TTL or retention has passed.
fn live_job<'a>(st: &'a mut State, id: &str, now: Millis) -> Result<&'a mut Job, JobError> {
    if st.jobs.get(id).is_some_and(|j| j.expired(now)) {
        remove_job(st, id);
    }
    st.jobs
        .get_mut(id)
        .ok_or_else(|| JobError::NotFound(id.to_string()))
}

fn remove_job(st: &mut State, id: &str) {
    if let Some(job) = st.jobs.remove(id) {
        job.wake.notify_waiters();
        job.done.notify_waiters();
        if job.status == JobStatus::InQueue {
            st.queue.retain(|q| q != id);
            st.queue_low.retain(|q| q != id);
        }
    }
}

fn sweep_locked(st: &mut State, now: Millis) {
    let expired: Vec<String> = st
        .jobs
        .values()
        .filter(|j| j.expired(now))
        .map(|j| j.id.clone())
        .collect();
    for id in expired {
        remove_job(st, &id);
    }
}

/// Marks a job final; returns the webhook call to make, if any.
fn finish(
    job: &mut Job,
    status: JobStatus,
    output: Option<Value>,
    error: Option<String>,
    now: Millis,
) -> Option<(String, Value)> {
    job.status = status;
    job.output = output;
    job.error = error;
    job.finished_at = Some(now);
    job.done.notify_waiters();
    job.wake.notify_waiters();
    job.webhook.clone().map(|url| (url, job.status_body()))
}

fn take_next(st: &mut State, now: Millis) -> Option<Assignment> {
    loop {
        let id = st.queue.pop_front().or_else(|| st.queue_low.pop_front())?;
        let exec_default = st.settings.execution_timeout_ms;
        let Some(job) = st.jobs.get_mut(&id) else {
            continue;
        };
        if job.status != JobStatus::InQueue {
            continue;
        }
        if job.expired(now) {
            remove_job(st, &id);
            continue;
        }
        job.status = JobStatus::InProgress;
        job.started_at = Some(now);
        return Some(Assignment {
            id,
            attempt: job.attempt,
            input: Arc::clone(&job.input),
            wake: Arc::clone(&job.wake),
            started_at: now,
            execution_timeout_ms: job.policy_execution_timeout_ms.unwrap_or(exec_default),
        });
    }
}
