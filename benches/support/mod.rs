//! What the operator benchmarks share: following objects until all are Ready, the
//! operator's memory, the apiserver's own count of writes, and the entry point that needs
//! a control plane.
#![allow(dead_code)]

pub mod deletes;
pub mod kubectl;
pub mod report;

use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use gpucloud_crd::ManagedKind;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::watcher;

use crate::common::calls::watch_listings;
use crate::common::operator::{Env, OperatorProcess, ready_now};

/// Follows the namespace's objects until `n` are Ready at once; the instant that happened.
pub async fn all_ready<K: ManagedKind>(
    api: Api<K>,
    n: usize,
    timeout: Duration,
) -> Option<Instant> {
    let mut ready: HashSet<String> = HashSet::new();
    let stream = watcher(api, watcher::Config::default());
    futures::pin_mut!(stream);
    let deadline = tokio::time::Instant::now() + timeout;
    while ready.len() < n {
        let event = match tokio::time::timeout_at(deadline, stream.try_next()).await {
            Ok(Ok(Some(event))) => event,
            Ok(Ok(None)) | Err(_) => return None,
            Ok(Err(err)) => {
                eprintln!("watch: {err}; continuing");
                continue;
            }
        };
        match event {
            watcher::Event::Apply(o) | watcher::Event::InitApply(o) => {
                if ready_now(&o) {
                    ready.insert(o.name_any());
                } else {
                    ready.remove(&o.name_any());
                }
            }
            watcher::Event::Delete(o) => {
                ready.remove(&o.name_any());
            }
            watcher::Event::Init | watcher::Event::InitDone => {}
        }
    }
    Some(Instant::now())
}

/// The operator's resident memory before the first object (KiB), read twice:
/// - **at start**: as soon as its `/metrics` answers. It has not yet taken its Lease nor
///   started a controller.
/// - **idle**: leading, every controller started and each of its watches listed once
///   (`gpucloud_watch_listings_total` names every kind), then `settle` more, with nothing
///   to work on.
///
/// Growth per object is counted from the idle figure: what starting the controllers costs
/// (their watches, their connections, the code they run first) is paid once by an install
/// of any size. In three runs of 10,000 volumes the two figures were the same (23.8 to 24.5
/// MiB): the controllers' start costs next to nothing, and the benchmark prints both.
pub struct IdleMemory {
    /// VmRSS at start (KiB).
    pub at_start_kib: u64,
    /// At the idle point.
    pub resident: Resident,
}

/// Waits for `operator` to be idle (see [`IdleMemory`]) and reads its memory. The operator
/// must serve `/metrics` on a known port ([`Env::operator_process_serving_metrics`]).
pub async fn idle_memory(operator: &OperatorProcess, settle: Duration) -> IdleMemory {
    let pid = operator.pid();
    let serving = crate::common::wait_until(Duration::from_secs(30), || async {
        operator.metrics().await.is_some()
    })
    .await;
    assert!(serving, "the operator did not serve its /metrics");
    let (at_start_kib, _) = resident_kib(pid);
    let controllers = gpucloud_operator::kinds::KINDS
        .iter()
        .filter(|kind| kind.controller.is_some())
        .count();
    let listed = crate::common::wait_until(Duration::from_secs(60), || async {
        let text = operator.metrics().await.unwrap_or_default();
        kinds_listed(&text) >= controllers
    })
    .await;
    assert!(
        listed,
        "the operator's {controllers} controllers did not all list"
    );
    tokio::time::sleep(settle).await;
    IdleMemory {
        at_start_kib,
        resident: resident(pid),
    }
}

/// Pure: how many kinds' watches have listed at least once, from the text of `/metrics`.
fn kinds_listed(metrics: &str) -> usize {
    watch_listings(metrics)
        .into_keys()
        .map(|(kind, _, _)| kind)
        .collect::<HashSet<_>>()
        .len()
}

/// A process's resident memory at one moment, in KiB.
#[derive(Clone, Copy, Debug)]
pub struct Resident {
    /// VmRSS: resident now.
    pub rss: u64,
    /// VmHWM: the most it has ever been.
    pub hwm: u64,
    /// What of `rss` is the process's own: heap and stacks (`RssAnon`).
    pub anon: u64,
    /// What of `rss` is mapped from files: its code (`RssFile`). Code pages come in as code
    /// first runs, so this grows too between idle and a converged run.
    pub file: u64,
}

/// [`Resident`] of process `pid`, from one read of `/proc/PID/status`.
pub fn resident(pid: u32) -> Resident {
    let status = proc_status(pid);
    Resident {
        rss: status("VmRSS:"),
        hwm: status("VmHWM:"),
        anon: status("RssAnon:"),
        file: status("RssFile:"),
    }
}

/// (VmRSS, VmHWM) of a process in KiB: resident now, and the most it has ever been.
pub fn resident_kib(pid: u32) -> (u64, u64) {
    let now = resident(pid);
    (now.rss, now.hwm)
}

/// A reader of `/proc/{pid}/status`'s KiB figures, by key (`VmRSS:`); 0 for one not found.
fn proc_status(pid: u32) -> impl Fn(&str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    move |key: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }
}

pub fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Writes the apiserver has served so far (POST, PUT, PATCH, APPLY, DELETE), from its own
/// `/metrics`, by verb and resource (`APPLY pods/status`), and by answer code too when
/// `with_code` (`APPLY pods/status 200`). None when the metrics cannot be read.
pub async fn apiserver_writes(
    client: &kube::Client,
    with_code: bool,
) -> Option<BTreeMap<String, f64>> {
    let request = axum::http::Request::get("/metrics").body(Vec::new()).ok()?;
    let text = client.request_text(request).await.ok()?;
    let label = |line: &str, name: &str| {
        let start = line.find(&format!("{name}=\""))? + name.len() + 2;
        let end = line[start..].find('"')? + start;
        Some(line[start..end].to_string())
    };
    let mut writes = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| l.starts_with("apiserver_request_total{"))
    {
        let Some(verb) = label(line, "verb") else {
            continue;
        };
        if !["POST", "PUT", "PATCH", "APPLY", "DELETE"].contains(&verb.as_str()) {
            continue;
        }
        let mut key = format!(
            "{verb} {}{}",
            label(line, "resource").unwrap_or_default(),
            label(line, "subresource")
                .filter(|s| !s.is_empty())
                .map(|s| format!("/{s}"))
                .unwrap_or_default(),
        );
        if with_code {
            key = format!("{key} {}", label(line, "code").unwrap_or_default());
        }
        let value: f64 = line
            .rsplit(' ')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        *writes.entry(key).or_default() += value;
    }
    Some(writes)
}

/// What the apiserver's write counters gained between two reads of [`apiserver_writes`].
pub fn writes_since(
    before: &BTreeMap<String, f64>,
    after: &BTreeMap<String, f64>,
) -> BTreeMap<String, u64> {
    after
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                (v - before.get(k).copied().unwrap_or(0.0)) as u64,
            )
        })
        .filter(|(_, d)| *d > 0)
        .collect()
}

/// Platform calls by operation: REST routes as they are (`GET /v2/pods`), GraphQL fields
/// without their prefix (`graphql:myself` → `myself`). The emulator counts a GraphQL call
/// twice, by field and as `POST /graphql`; the latter is left out.
pub fn by_operation(calls: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    calls
        .iter()
        .filter(|(route, _)| route.as_str() != "POST /graphql")
        .map(|(route, n)| {
            let op = route.strip_prefix("graphql:").unwrap_or(route);
            (op.to_string(), *n)
        })
        .collect()
}

/// What a converged operator costs per resync interval.
pub struct Steady {
    /// Platform calls per interval, by operation.
    pub calls_per_interval: BTreeMap<String, f64>,
    /// Apiserver writes over all the intervals, by verb and resource.
    pub writes: BTreeMap<String, u64>,
    pub intervals: u32,
}

impl Steady {
    pub fn writes_per_interval(&self) -> f64 {
        self.writes.values().sum::<u64>() as f64 / f64::from(self.intervals)
    }

    /// Platform calls per interval, every operation summed.
    pub fn calls_per_interval(&self) -> f64 {
        self.calls_per_interval.values().sum()
    }

    /// Records both per-interval figures in the run's report.
    pub fn report(&self) {
        report::figure(
            "platform calls per resync once converged",
            self.calls_per_interval(),
            "calls",
        );
        report::figure(
            "apiserver writes per resync once converged",
            self.writes_per_interval(),
            "writes",
        );
    }
}

/// Records the figures of a convergence: the creates, first create to all Ready, and the
/// apiserver writes per object, for `n` objects of `what` ("volumes", "Pods"...).
pub fn report_converged(c: &Converged, n: usize, what: &str) {
    report::figure(
        &format!("{n} {what}: creates"),
        c.applied.as_secs_f64(),
        "s",
    );
    report::figure(
        &format!("{n} {what}: first create to all Ready"),
        c.converged.as_secs_f64(),
        "s",
    );
    report::figure(
        &format!("{n} {what}: apiserver writes per object"),
        c.total_writes as f64 / n as f64,
        "writes",
    );
    report::figure("operator memory idle before", mib(c.rss_idle_kib), "MiB");
    report::figure(
        "operator memory right after all Ready",
        mib(c.rss_ready_kib),
        "MiB",
    );
}

/// The operator's resident memory now and at its peak (KiB, as [`resident_kib`]), recorded
/// in the run's report as its steady and peak figures.
pub fn resident_reported(pid: u32) -> (u64, u64) {
    let (rss, hwm) = resident_kib(pid);
    report::figure("operator memory peak (VmHWM)", mib(hwm), "MiB");
    report::figure("operator memory steady", mib(rss), "MiB");
    (rss, hwm)
}

/// Prints and records the operator's memory once converged with `n` objects of `what`
/// ("Pods"...): its peak and steady resident set, and what it held idle before the first
/// create and right after all were Ready.
pub fn report_memory(c: &Converged, n: usize, what: &str) {
    let (rss_steady, hwm) = resident_reported(c.pid);
    println!(
        "  operator memory:              peak VmHWM {:.1} MiB; steady VmRSS {:.1} MiB with {n} {what} (idle before: {:.1} MiB, right after all Ready: {:.1} MiB)",
        mib(hwm),
        mib(rss_steady),
        mib(c.rss_idle_kib),
        mib(c.rss_ready_kib)
    );
}

/// Fails the run when the platform holds `found` of the `n` objects it should.
pub fn expect_on_platform(found: usize, n: usize, what: &str) {
    if found != n {
        report::fail(format!("{found} {what} on the platform, not {n}"));
    }
}

/// [`steady_resync`], recorded ([`Steady::report`]) and printed.
pub async fn resync_costs(env: &Env, poll: Duration) -> Steady {
    let steady = steady_resync(env, poll).await;
    steady.report();
    println!(
        "  platform calls per resync:    {:?} (over {} intervals of {:?})",
        steady.calls_per_interval, steady.intervals, poll
    );
    println!(
        "  apiserver writes per resync:  {:.1} (over the same intervals: {:?})",
        steady.writes_per_interval(),
        steady.writes
    );
    steady
}

/// Once converged: lets the passes that Ready triggered settle (one interval), then counts
/// the platform calls and apiserver writes of three whole resync intervals of `poll`.
pub async fn steady_resync(env: &Env, poll: Duration) -> Steady {
    let admin = env.emulator.admin();
    tokio::time::sleep(poll).await;
    admin.clear_calls().await.expect("clear the call counts");
    let before = apiserver_writes(&env.client, false)
        .await
        .unwrap_or_default();
    let intervals = 3u32;
    tokio::time::sleep(poll * intervals).await;
    let calls = env.calls().await;
    let after = apiserver_writes(&env.client, false)
        .await
        .unwrap_or_default();
    let calls_per_interval = by_operation(&calls)
        .iter()
        .map(|(op, c)| (op.clone(), *c as f64 / f64::from(intervals)))
        .collect();
    Steady {
        calls_per_interval,
        writes: writes_since(&before, &after),
        intervals,
    }
}

/// The emulator's configuration with its REST v2 quota lifted to
/// `BENCH_V2_QUOTA_PER_MINUTE` calls per minute (and the hour and day windows to match),
/// when set: to measure the operator rather than the quota. Unset, the emulator keeps its
/// own quota, as a real account has one.
pub fn with_bench_quota(
    mut config: gpucloud_emulator::EmulatorConfig,
) -> gpucloud_emulator::EmulatorConfig {
    if let Some(per_minute) = std::env::var("BENCH_V2_QUOTA_PER_MINUTE")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        config.v2_quota.minute = per_minute;
        config.v2_quota.hour = config.v2_quota.hour.max(per_minute * 60);
        config.v2_quota.day = config.v2_quota.day.max(per_minute * 60 * 24);
    }
    config
}

/// Runs benchmark `name` on a multi-threaded runtime, or says how to start the control
/// plane it needs and skips.
pub fn main_with_control_plane<F, Fut>(name: &str, run: F)
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = ()>,
{
    report::begin(name);
    if std::env::var_os("KUBECONFIG").is_none() {
        println!(
            "{name}: KUBECONFIG is not set; this benchmark needs a control plane.\n\
             Start one with `eval \"$(tests/control-plane/cp.sh up --dir /tmp/cp-bench)\"` and run\n\
             `cargo bench --bench {name} [-- N]`."
        );
        report::fail("KUBECONFIG is not set: no control plane");
        report::finish();
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(run());
    report::finish();
}

/// What applying N objects at once measured, up to all of them Ready.
pub struct Converged {
    pub pid: u32,
    /// Resident memory with the operator idle, before the first create (KiB; see
    /// [`IdleMemory`]).
    pub rss_idle_kib: u64,
    /// The `kubectl apply` of the objects alone.
    pub applied: Duration,
    /// First create to all Ready.
    pub converged: Duration,
    /// Apiserver writes meanwhile, by verb, resource and code.
    pub writes: BTreeMap<String, u64>,
    pub total_writes: u64,
    /// Resident memory right after all were Ready (KiB).
    pub rss_ready_kib: u64,
}

/// Waits for the operator to be idle ([`idle_memory`], `settle` after its watches listed),
/// applies `objects` into `api`'s namespace at once ([`kubectl::apply`]) and follows them
/// until all are Ready within
/// `timeout`. `None`, with the operator's last log lines printed and the run's report
/// failed, when they were not.
pub async fn apply_until_ready<K: ManagedKind>(
    env: &Env,
    operator: &OperatorProcess,
    api: &Api<K>,
    objects: Vec<K>,
    timeout: Duration,
    settle: Duration,
) -> Option<Converged> {
    let pid = operator.pid();
    let rss_idle_kib = idle_memory(operator, settle).await.resident.rss;
    let n = objects.len();
    let watch = tokio::spawn(all_ready(api.clone(), n, timeout));
    let writes_before = apiserver_writes(&env.client, false)
        .await
        .unwrap_or_default();
    let started = Instant::now();
    let applied = kubectl::apply(env.ns.name(), &objects);
    let Some(ready_at) = watch.await.expect("the watch task") else {
        report::fail(format!(
            "NOT CONVERGED: {n} objects not all Ready within {timeout:?}"
        ));
        let log = operator.log();
        let lines: Vec<&str> = log.lines().collect();
        for line in &lines[lines.len().saturating_sub(40)..] {
            eprintln!("  | {line}");
        }
        return None;
    };
    let writes = writes_since(
        &writes_before,
        &apiserver_writes(&env.client, false)
            .await
            .unwrap_or_default(),
    );
    let total_writes = writes.values().sum();
    Some(Converged {
        pid,
        rss_idle_kib,
        applied,
        converged: ready_at.duration_since(started),
        writes,
        total_writes,
        rss_ready_kib: resident_kib(pid).0,
    })
}

/// A whole number from the environment variable `name`, if it is set and is one.
pub fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok())
}

/// How many objects a run takes: the first number among the arguments
/// (`cargo bench --bench x -- 500`), else `BENCH_OBJECTS`, else `default`.
pub fn objects(default: usize) -> usize {
    std::env::args()
        .skip(1)
        .find_map(|a| a.parse::<usize>().ok())
        .or_else(|| env_number("BENCH_OBJECTS").map(|n| n as usize))
        .unwrap_or(default)
}

/// Logs at `warn` unless RUST_LOG says otherwise: the emulator runs in the benchmark's
/// process, and its line per create would drown the figures (and slow the run).
pub fn quiet_logs() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .try_init();
}

/// The built-in catalog with the stock of `gpu` replaced by `machines` secure machines of
/// `gpus_per_machine` in EU-RO-1: enough that a create refused for want of stock, which
/// would measure the fallback instead of the operator, does not happen.
pub fn emulator_with_stock(
    gpu: &str,
    machines: u32,
    gpus_per_machine: u32,
    boot_ms: u64,
) -> gpucloud_emulator::EmulatorConfig {
    let mut fixtures = gpucloud_emulator::Fixtures::built_in();
    let gpu_type = fixtures
        .gpu_types
        .iter_mut()
        .find(|g| g.id == gpu)
        .expect("the built-in catalog has the GPU type");
    gpu_type.stock = vec![gpucloud_emulator::model::StockFixture {
        data_center_id: "EU-RO-1".into(),
        secure_cloud: true,
        machines,
        gpus_per_machine,
    }];
    with_bench_quota(gpucloud_emulator::EmulatorConfig {
        fixtures: Some(fixtures),
        pod_boot_ms: boot_ms,
        ..gpucloud_emulator::EmulatorConfig::default()
    })
}
