//! A benchmark's figures as JSON, and its verdict as the exit status.
//!
//! Every benchmark records each figure it prints ([`figure`]: a name, a value, a unit) and
//! each thing that went wrong ([`fail`]: a run that did not converge, a request that
//! failed). [`finish`] writes `BENCH_REPORT_DIR/NAME.json` (default
//! `target/bench-reports/`, under `CARGO_TARGET_DIR` when set) with the commit, the machine,
//! the command and its environment, then exits: 0 only when nothing failed and at least one
//! figure was recorded. `scripts/bench.sh` collects these files; the docs quote them
//! (docs/bench/README.md).

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

use serde_json::{Value, json};

struct Report {
    benchmark: String,
    figures: Vec<Value>,
    failures: Vec<String>,
    /// `/proc/loadavg`'s three load averages when the benchmark began.
    load_at_begin: Value,
    /// The commit checked out when the benchmark began, not when it ended: a commit made
    /// while it runs does not change what it measured.
    commit: String,
    began: std::time::Instant,
}

static REPORT: Mutex<Option<Report>> = Mutex::new(None);

fn with_report(f: impl FnOnce(&mut Report)) {
    let mut guard = REPORT.lock().unwrap_or_else(|p| p.into_inner());
    let report = guard.as_mut().expect("report::begin was not called");
    f(report);
}

/// Starts the report of benchmark `name`.
pub fn begin(name: &str) {
    *REPORT.lock().unwrap_or_else(|p| p.into_inner()) = Some(Report {
        benchmark: name.to_string(),
        figures: Vec::new(),
        failures: Vec::new(),
        load_at_begin: load_average(),
        commit: commit(),
        began: std::time::Instant::now(),
    });
}

/// Records figure `name` (what was measured, e.g. "volumes ready after the last create")
/// as `value` in `unit` ("s", "ms", "KiB", "per s", "calls", "x"...).
pub fn figure(name: &str, value: f64, unit: &str) {
    with_report(|r| {
        r.figures
            .push(json!({"name": name, "value": value, "unit": unit}))
    });
}

/// Records that the run failed: its figures are not to be quoted. Printed at once too.
pub fn fail(what: impl Into<String>) {
    let what = what.into();
    println!("  FAILED: {what}");
    with_report(|r| r.failures.push(what));
}

fn output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The commit of the checkout, with `-dirty` when it has changes.
fn commit() -> String {
    let head = output("git", &["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let dirty = output("git", &["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|s| !s.is_empty());
    if dirty { format!("{head}-dirty") } else { head }
}

fn first_line_with(path: &str, prefix: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().find(|l| l.starts_with(prefix))?;
    Some(line.split_once(':')?.1.trim().to_string())
}

fn machine() -> Value {
    json!({
        "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "cpu_model": first_line_with("/proc/cpuinfo", "model name"),
        "memory": first_line_with("/proc/meminfo", "MemTotal"),
        "kernel": output("uname", &["-r"]),
    })
}

/// The machine's 1, 5 and 15-minute load averages: how busy it was with anything besides
/// the benchmark shows in the figures, so the report says it.
fn load_average() -> Value {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let averages: Vec<f64> = text
        .split_whitespace()
        .take(3)
        .filter_map(|v| v.parse().ok())
        .collect();
    json!(averages)
}

/// The variables that change what a benchmark does (not where its report goes).
fn environment() -> Value {
    let vars: serde_json::Map<String, Value> = std::env::vars()
        .filter(|(k, _)| {
            (k.starts_with("BENCH_") && k != "BENCH_REPORT_DIR")
                || k == "GPUCLOUD_TEST_PLATFORM_API"
                || k == "RUST_LOG"
        })
        .map(|(k, v)| (k, Value::from(v)))
        .collect();
    Value::Object(vars)
}

fn report_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("BENCH_REPORT_DIR") {
        return PathBuf::from(dir);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("bench-reports")
}

/// Writes the report and exits: 1 when anything failed or nothing was measured.
pub fn finish() -> ! {
    let report = REPORT
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
        .expect("report::begin was not called");
    let mut failures = report.failures;
    if report.figures.is_empty() && failures.is_empty() {
        failures.push("no figure was recorded".into());
    }
    let body = json!({
        "benchmark": report.benchmark,
        "commit": report.commit,
        "date": k8s_openapi::jiff::Timestamp::now().to_string(),
        "machine": machine(),
        "load_average": {"at_begin": report.load_at_begin, "at_end": load_average()},
        "seconds": report.began.elapsed().as_secs(),
        "command": std::env::args().collect::<Vec<_>>(),
        "environment": environment(),
        "figures": report.figures,
        "failures": failures,
    });
    let dir = report_dir();
    let file = dir.join(format!("{}.json", report.benchmark));
    let written = std::fs::create_dir_all(&dir).and_then(|()| {
        std::fs::write(
            &file,
            serde_json::to_string_pretty(&body).unwrap_or_default(),
        )
    });
    match written {
        Ok(()) => println!("report: {}", file.display()),
        Err(e) => {
            println!("could not write {}: {e}", file.display());
            std::process::exit(1);
        }
    }
    if failures.is_empty() {
        std::process::exit(0);
    }
    println!("{} FAILED: {}", report.benchmark, failures.join("; "));
    std::process::exit(1);
}
