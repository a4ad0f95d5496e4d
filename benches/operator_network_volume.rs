//! Benchmark (not a test): N NetworkVolumes applied at once to a real kube-apiserver, the
//! emulator in this process, the operator binary as a child process.
//!
//!   eval "$(tests/control-plane/cp.sh up --dir /tmp/cp-bench)"
//!   cargo bench --bench operator_network_volume              # 1,000 objects
//!   cargo bench --bench operator_network_volume -- 10000     # or BENCH_OBJECTS=10000
//!
//! Prints: the time from the first apply to all Ready and after the last apply, the volumes
//! applied with `kubectl apply` (on PATH) from one file; the same apply with no operator
//! running, into a namespace nobody watches, and the ratio (the design's bar is 1.5x);
//! platform calls per resync interval once converged; the operator's resident memory and
//! its growth per object; then the time from deleting all to all gone (deletes per second,
//! apiserver writes per object) beside the same N deletes bare (nothing watching, no
//! finalizers).
//!
//! Environment:
//! - BENCH_DELETE: the volumes' deletionPolicy, `orphan` (the default) or `delete`; or
//!   `both`, a second round of N volumes made and deleted with Delete.
//! - GPUCLOUD_TEST_PLATFORM_API: `v2` (the default) or `seed`.
//! - BENCH_V2_QUOTA_PER_MINUTE: the emulator's REST v2 quota per key and route group.
//! - BENCH_OBJECTS: the number of volumes (default 1000).
//! - BENCH_POLL_SECONDS: the resync interval (default 10).
//! - BENCH_CONCURRENCY: reconciles at once (default the operator's own).
//! - BENCH_WARM_OBJECTS: W objects made first and left Ready through two resyncs before the
//!   other N - W; the memory then and at the end gives the slope per object from W to N,
//!   with what any run adds once (code run for the first time, buffers grown) left out.
//!   The times then describe the last N - W creates.

#[path = "../tests/common/mod.rs"]
mod common;
mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use gpucloud_crd::NetworkVolume;
use kube::api::{Api, PostParams};

use common::TestNamespace;
use common::calls::total_calls;
use common::operator::{Env, OperatorProcess, volume};
use support::{
    Resident, all_ready, apiserver_writes, deletes, env_number, idle_memory, mib, resident,
    resident_kib, with_bench_quota,
};

struct Options {
    objects: usize,
    poll: Duration,
    concurrency: Option<u16>,
    warm: Option<usize>,
}

fn options() -> Options {
    Options {
        objects: support::objects(1000),
        poll: Duration::from_secs(env_number("BENCH_POLL_SECONDS").unwrap_or(10)),
        concurrency: env_number("BENCH_CONCURRENCY").map(|n| n as u16),
        warm: env_number("BENCH_WARM_OBJECTS").map(|n| n as usize),
    }
}

fn name_of(i: usize) -> String {
    format!("vol-{i:05}")
}

/// Creates `n` NetworkVolumes of deletion policy `policy` one after another on one
/// connection; returns how long it took.
async fn apply_all(api: &Api<NetworkVolume>, n: usize, policy: &str) -> Duration {
    apply_range(api, 0..n, policy).await
}

/// [`apply_all`] of the volumes numbered `range`.
async fn apply_range(
    api: &Api<NetworkVolume>,
    range: std::ops::Range<usize>,
    policy: &str,
) -> Duration {
    let started = Instant::now();
    for i in range {
        api.create(
            &PostParams::default(),
            &volume(
                &name_of(i),
                10,
                serde_json::json!({"deletionPolicy": policy}),
            ),
        )
        .await
        .expect("create a NetworkVolume");
    }
    started.elapsed()
}

/// `kubectl apply` of the volumes numbered `range` into `namespace` ([`support::kubectl`]):
/// the same way with and without the operator running.
fn kubectl_apply(namespace: &str, range: std::ops::Range<usize>, policy: &str) -> Duration {
    let items: Vec<NetworkVolume> = range
        .map(|i| {
            volume(
                &name_of(i),
                10,
                serde_json::json!({"deletionPolicy": policy}),
            )
        })
        .collect();
    support::kubectl::apply(namespace, &items)
}

/// The operator's memory with `objects` volumes Ready and two resyncs done: every path
/// the objects take has run and the buffers they need have grown, so what grows after it
/// grows with the objects (KiB).
struct Warm {
    objects: usize,
    at: Resident,
}

/// Makes the first `objects` volumes, waits for them to be Ready and for two resyncs, and
/// reads the memory ([`Warm`]). `None` when they did not all become Ready.
async fn warm_point(
    api: &Api<NetworkVolume>,
    pid: u32,
    objects: usize,
    poll: Duration,
    policy: &str,
) -> Option<Warm> {
    let timeout = Duration::from_secs(120 + objects as u64 / 5);
    let watch = tokio::spawn(all_ready(api.clone(), objects, timeout));
    apply_range(api, 0..objects, policy).await;
    watch.await.expect("the watch task")?;
    tokio::time::sleep(poll * 2).await;
    let at = resident(pid);
    println!(
        "  warm point:                 {objects} Ready, two resyncs later: VmRSS {:.1} MiB, heap and stacks {:.1}, code {:.1}",
        mib(at.rss),
        mib(at.anon),
        mib(at.file)
    );
    Some(Warm { objects, at })
}

/// CPU seconds (user + system) a process has used so far.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    (ticks(11) + ticks(12)) as f64 / 100.0
}

/// CPU seconds used so far by the control plane's etcd and kube-apiserver, from the `pids`
/// file `cp.sh` writes next to the kubeconfig (none if it is not there).
fn control_plane_cpu() -> Option<f64> {
    let kubeconfig = std::path::PathBuf::from(std::env::var_os("KUBECONFIG")?);
    let pids = std::fs::read_to_string(kubeconfig.parent()?.join("pids")).ok()?;
    let total = pids
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(_, name)| matches!(*name, "etcd" | "kube-apiserver"))
        .filter_map(|(pid, _)| pid.parse::<u32>().ok())
        .map(cpu_seconds)
        .sum();
    Some(total)
}

/// Apiserver writes and control-plane CPU over one phase.
struct Cost {
    writes: Option<BTreeMap<String, f64>>,
    cpu: Option<f64>,
}

impl Cost {
    async fn start(client: &kube::Client) -> Self {
        Self {
            writes: apiserver_writes(client, true).await,
            cpu: control_plane_cpu(),
        }
    }

    async fn since(&self, client: &kube::Client) -> Self {
        let now = Self::start(client).await;
        let writes = now.writes.zip(self.writes.as_ref()).map(|(after, before)| {
            after
                .into_iter()
                .map(|(k, v)| {
                    let d = v - before.get(&k).copied().unwrap_or(0.0);
                    (k, d)
                })
                .filter(|(_, d)| *d > 0.0)
                .collect()
        });
        Self {
            writes,
            cpu: now.cpu.zip(self.cpu).map(|(b, a)| b - a),
        }
    }

    fn total_writes(&self) -> Option<f64> {
        self.writes.as_ref().map(|w| w.values().sum())
    }

    fn describe(&self, n: usize) -> String {
        let writes = self.total_writes().map_or("unknown".into(), |w| {
            format!("{w:.0} apiserver writes ({:.1} per object)", w / n as f64)
        });
        let cpu = self
            .cpu
            .map_or("unknown".into(), |c| format!("{c:.1} s control-plane CPU"));
        format!("{writes}, {cpu}")
    }
}

async fn run(opts: Options) {
    let n = opts.objects;
    println!(
        "operator_network_volume: {n} NetworkVolumes on the {} backend, resync every {:?}",
        common::backend::backend(),
        opts.poll
    );

    // The bare apiserver: the same N creates, one connection, nothing watching them.
    // BENCH_V2_QUOTA_PER_MINUTE lifts the emulator's REST v2 quota (default: the emulator's
    // own, as a real account has one), to measure the operator rather than the quota.
    let config = with_bench_quota(gpucloud_emulator::EmulatorConfig::default());
    let env = Env::start_with("bench-nv", config).await;
    let bare_ns = TestNamespace::create(&env.client, "bench-bare").await;
    let bare_api: Api<NetworkVolume> = Api::namespaced(env.client.clone(), bare_ns.name());
    let bare_cost = Cost::start(&env.client).await;
    let policies = deletes::policies();
    let bare = kubectl_apply(bare_ns.name(), 0..n, policies[0]);
    let bare_cost = bare_cost.since(&env.client).await;
    println!(
        "  kubectl apply, no operator: {n} creates in {:.2} s ({:.2} s per 1,000); {}",
        bare.as_secs_f64(),
        bare.as_secs_f64() * 1000.0 / n as f64,
        bare_cost.describe(n)
    );
    support::kubectl::record_baseline(&format!("{n} volumes"), bare);
    let report = support::report::figure;
    let bare_delete = deletes::delete_all(&env.client, &bare_api, Duration::from_secs(600)).await;
    println!("  bare apiserver deletes:     {}", bare_delete.describe());
    bare_delete.report("bare apiserver");
    bare_ns.delete_and_wait(&env.client).await;

    // The operator, as a child process.
    let poll = format!("--poll-interval={}s", opts.poll.as_secs());
    let concurrency = opts.concurrency.map(|c| format!("--concurrency={c}"));
    let mut flags = vec![poll.as_str(), "--progress-interval=5s"];
    if let Some(c) = &concurrency {
        flags.push(c);
    }
    let operator: OperatorProcess = env.operator_process_serving_metrics(&flags);
    let pid = operator.pid();
    let api: Api<NetworkVolume> = env.api();
    // The clock starts once the operator is idle: leading, its controllers started and
    // their watches listed, one progress interval later.
    let idle = idle_memory(&operator, Duration::from_secs(5)).await;
    let (rss_idle, anon_idle, file_idle) =
        (idle.resident.rss, idle.resident.anon, idle.resident.file);

    let timeout = Duration::from_secs(120 + n as u64 / 5);
    let warm = match opts.warm.filter(|&w| w < n) {
        Some(w) => {
            let Some(warm) = warm_point(&api, pid, w, opts.poll, policies[0]).await else {
                support::report::fail(format!("NOT CONVERGED: the first {w} volumes"));
                print_log_tail(&operator);
                return;
            };
            Some(warm)
        }
        None => None,
    };
    let first = warm.as_ref().map_or(0, |w| w.objects);
    let watch = tokio::spawn(all_ready(api.clone(), n, timeout));
    let cost = Cost::start(&env.client).await;
    let operator_cpu = cpu_seconds(pid);
    let started = Instant::now();
    let applied = kubectl_apply(env.ns.name(), first..n, policies[0]);
    let Some(all_ready) = watch.await.expect("the watch task") else {
        support::report::fail(format!("NOT CONVERGED within {timeout:?}"));
        print_log_tail(&operator);
        return;
    };
    let converge = all_ready.duration_since(started);
    let cost = cost.since(&env.client).await;
    let operator_cpu = cpu_seconds(pid) - operator_cpu;
    let (rss_ready, _) = resident_kib(pid);
    println!(
        "  applies (with operator):    {} creates in {:.2} s{}",
        n - first,
        applied.as_secs_f64(),
        if first > 0 {
            format!(" ({first} already Ready: times below are of these)")
        } else {
            String::new()
        }
    );
    println!(
        "  first apply to all Ready:   {:.2} s; {}; operator CPU {operator_cpu:.1} s",
        converge.as_secs_f64(),
        cost.describe(n - first)
    );
    println!(
        "  all Ready after the last create: {:.2} s",
        converge.saturating_sub(applied).as_secs_f64()
    );
    if let Some(writes) = &cost.writes {
        println!("  apiserver writes by verb, resource and code: {writes:?}");
    }
    let created_n = n - first;
    report(
        &format!("{created_n} volumes: creates with the operator running"),
        applied.as_secs_f64(),
        "s",
    );
    report(
        &format!("{created_n} volumes: first create to all Ready"),
        converge.as_secs_f64(),
        "s",
    );
    report(
        &format!("{created_n} volumes: all Ready after the last create"),
        converge.saturating_sub(applied).as_secs_f64(),
        "s",
    );
    support::kubectl::report_ratio(converge, bare);
    if let Some(writes) = cost.total_writes() {
        report(
            "apiserver writes per volume",
            writes / created_n as f64,
            "writes",
        );
    }
    report("operator CPU to converge", operator_cpu, "s");

    // Platform calls per resync interval once converged.
    let admin = env.emulator.admin();
    let created = admin
        .call_count(common::backend::routes().create_volume)
        .await
        .unwrap_or(0);
    let converge_calls = total_calls(&env.calls().await);
    tokio::time::sleep(opts.poll).await;
    admin.clear_calls().await.expect("clear calls");
    let intervals = 3u32;
    tokio::time::sleep(opts.poll * intervals).await;
    let calls = env.calls().await;
    let per_interval = total_calls(&calls) as f64 / f64::from(intervals);
    println!("  platform calls to converge: {converge_calls} ({created} creates)");
    report("platform calls to converge", converge_calls as f64, "calls");
    report(
        "platform calls per resync once converged",
        per_interval,
        "calls",
    );
    if created != created_n as u64 {
        support::report::fail(format!(
            "{created} platform creates for {created_n} volumes"
        ));
    }
    println!(
        "  platform calls per resync:  {per_interval:.1} over {intervals} intervals of {:?}: {calls:?}",
        opts.poll
    );
    let Resident {
        rss,
        hwm,
        anon,
        file,
    } = resident(pid);
    println!(
        "  operator memory:            VmRSS {:.1} MiB with {n} objects (idle before: {:.1} MiB, at start {:.1}; right after Ready: {:.1} MiB, peak VmHWM {:.1} MiB)",
        mib(rss),
        mib(rss_idle),
        mib(idle.at_start_kib),
        mib(rss_ready),
        mib(hwm)
    );
    println!(
        "  of which:                   heap and stacks (RssAnon) {:.1} MiB, idle {:.1}; code (RssFile) {:.1} MiB, idle {:.1}",
        mib(anon),
        mib(anon_idle),
        mib(file),
        mib(file_idle)
    );
    // Over the idle figure, per object. The code's share is the binary's own pages, mapped
    // as each path first runs, whatever the number of objects: the heap's share is what
    // grows with them. Over the start figure too, the one runs before c76e733 read.
    let per_object = |now: u64, idle: u64| now.saturating_sub(idle) as f64 / n as f64;
    report("operator memory idle", mib(rss_idle), "MiB");
    report(
        &format!("operator memory with {n} volumes"),
        mib(rss),
        "MiB",
    );
    report("operator memory peak (VmHWM)", mib(hwm), "MiB");
    report(
        "operator memory growth per volume",
        per_object(rss, rss_idle),
        "KiB",
    );
    report(
        "operator heap and stacks growth per volume",
        per_object(anon, anon_idle),
        "KiB",
    );
    println!(
        "  growth per object:          {:.2} KiB in all (VmRSS less idle), {:.2} KiB of heap and stacks (RssAnon less idle); {:.2} KiB over the start figure",
        per_object(rss, rss_idle),
        per_object(anon, anon_idle),
        per_object(rss, idle.at_start_kib)
    );
    if let Some(w) = &warm {
        let slope = |now: u64, then: u64| now.saturating_sub(then) as f64 / (n - w.objects) as f64;
        println!(
            "  slope from {} to {n} objects: {:.2} KiB per object in all (VmRSS {:.1} MiB then), {:.2} of heap and stacks, {:.2} of code",
            w.objects,
            slope(rss, w.at.rss),
            mib(w.at.rss),
            slope(anon, w.at.anon),
            slope(file, w.at.file)
        );
    }

    // Delete all: the operator releases (Orphan) or deletes (Delete) every remote volume,
    // then lets the object go. Further policies: a new round of N volumes first.
    let delete_timeout = Duration::from_secs(120 + n as u64 / 5);
    for (round, policy) in policies.iter().enumerate() {
        if round > 0 {
            let watch = tokio::spawn(support::all_ready(api.clone(), n, timeout));
            let started = Instant::now();
            apply_all(&api, n, policy).await;
            match watch.await.expect("the watch task") {
                Some(at) => {
                    let took = at.duration_since(started).as_secs_f64();
                    println!("  {n} more ({policy}) Ready:    {took:.2} s after the first apply");
                    report(
                        &format!("{n} more volumes ({policy}): first create to all Ready"),
                        took,
                        "s",
                    );
                }
                None => {
                    support::report::fail(format!(
                        "{n} more ({policy}): NOT CONVERGED within {timeout:?}"
                    ));
                    print_log_tail(&operator);
                    break;
                }
            }
        }
        let (operator_cpu, control_plane) = (cpu_seconds(pid), control_plane_cpu());
        let deleted = deletes::delete_all(&env.client, &api, delete_timeout).await;
        let operator_cpu = cpu_seconds(pid) - operator_cpu;
        let control_plane = control_plane_cpu()
            .zip(control_plane)
            .map_or("unknown".into(), |(b, a)| format!("{:.1} s", b - a));
        let versus_bare = deleted
            .gone
            .zip(bare_delete.gone)
            .map_or(String::new(), |(d, b)| {
                format!(
                    " = {:.2}x the bare deletes",
                    d.as_secs_f64() / b.as_secs_f64()
                )
            });
        println!(
            "  delete all ({policy}):{:pad$}{}{versus_bare}",
            "",
            deleted.describe(),
            pad = 10 - policy.len()
        );
        println!(
            "  delete writes by verb, resource and code: {:?}; CPU: control plane {control_plane}, operator {operator_cpu:.1} s",
            deleted.writes
        );
        deleted.report(policy);
        if deleted.gone.is_none() {
            print_log_tail(&operator);
        }
    }
    // The namespace holds an Event per object created and deleted: at 100,000, minutes of
    // the namespace controller's work.
    let teardown = Duration::from_secs(60 + n as u64 / 500);
    env.finish_process_within(operator, teardown).await;
}

fn print_log_tail(operator: &OperatorProcess) {
    let log = operator.log();
    let lines: Vec<&str> = log.lines().collect();
    for line in &lines[lines.len().saturating_sub(40)..] {
        eprintln!("  | {line}");
    }
}

fn main() {
    support::main_with_control_plane("operator_network_volume", || run(options()));
}
