//! Leader election through a network partition, end to end: two operators in-process with
//! `--leader-election` on one Lease of a real kube-apiserver, the emulator over real HTTP;
//! the leader reaches the apiserver through a TCP proxy of the test, which cuts it off
//! (connections closed and refused) or stalls it (connections held silent). The leader
//! must stop acting before the other replica may lead (it cannot renew; its Lease has not
//! expired for anyone yet), the other replica leads once the Lease expires, an object
//! created meanwhile is made once, and when the proxy is restored the old leader stays a
//! follower, Ready, in the same process. Both replicas' leader gauges are sampled every
//! 100 ms throughout: never both 1. The measured times are printed. Run through
//! `scripts/test.sh` (it needs `KUBECONFIG`).

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use serde_json::json;
use tokio::sync::watch;

use common::calls::calls_since;
use common::http::port_answer;
use common::lease::{LeaderSampler, leads};
use common::log_capture::{capture_logs_with, captured};
use common::operator::{Env, Operator, free_port, is_ready, volume};
use common::proxy::{Mode, Proxy, apiserver_proxy};
use common::wait_until;
use gpucloud_operator::cli::run::run_with;

const TIMEOUT: Duration = Duration::from_secs(30);
/// The Lease's duration: the other replica may lead only once it has seen the Lease
/// unrenewed for this long.
const LEASE: Duration = Duration::from_secs(15);
/// The latest a cut-off leader may stop acting: its renew deadline (10 s after its last
/// renew was sent, at most 2 s before the cut) plus the drain of its passes (2 s), and a
/// second for the gauge to be read.
const STOPS_WITHIN: Duration = Duration::from_secs(13);

fn flags(identity: &str, port: u16) -> [String; 3] {
    [
        "--leader-election".to_string(),
        format!("--identity={identity}"),
        format!("--metrics-addr=127.0.0.1:{port}"),
    ]
}

/// A replica whose kube client is `client`.
fn replica_on(env: &Env, client: kube::Client, identity: &str, port: u16) -> Operator {
    let flags = flags(identity, port);
    let args = env.args(&flags.iter().map(String::as_str).collect::<Vec<_>>());
    let (stop, stop_rx) = watch::channel(false);
    let task = tokio::spawn(async move { run_with(args, client, stop_rx).await });
    // Not checked released on stop: a replica cut off from the apiserver cannot release.
    Operator {
        stop,
        task,
        lease: None,
        metrics_port: port,
    }
}

async fn holder(env: &Env) -> Option<String> {
    common::lease::holder(env).await
}

/// Waits for the sign that replica-a, cut off from the apiserver, has had its chance to
/// lead again once the apiserver answers: it says that it has read the Lease again (it
/// decides on that read), and the Lease has been written after that (replica-b's renewal,
/// or replica-a's take where it would lead again).
async fn lease_read_again_and_written_since(env: &Env) {
    let said = format!("lease={}/", env.ns.name());
    let read_again = wait_until(TIMEOUT, || async {
        captured()
            .lines()
            .any(|l| l.contains("the apiserver answers about the Lease again") && l.contains(&said))
    })
    .await;
    assert!(read_again, "replica-a never read the Lease again");
    let leases: Api<Lease> = env.api();
    let version = |lease: Lease| lease.metadata.resource_version;
    let read = version(leases.get("gpucloud-operator").await.unwrap());
    let written = wait_until(TIMEOUT, || async {
        version(leases.get("gpucloud-operator").await.unwrap()) != read
    })
    .await;
    assert!(
        written,
        "the Lease was not written after replica-a read it again"
    );
}

/// The volumes on the platform made for object `name` of the test's namespace.
async fn made_for(env: &Env, name: &str) -> usize {
    let prefix = format!("{}-{name}-", env.ns.name());
    env.remote_volumes_where(|n| n.starts_with(&prefix))
        .await
        .len()
}

/// Two replicas: `replica-a` leading through the proxy, with `before` Ready under it, and
/// `replica-b` following, Ready.
struct Replicas {
    env: Env,
    proxy: Proxy,
    a: Operator,
    b: Operator,
    port_a: u16,
    port_b: u16,
}

impl Replicas {
    async fn start(prefix: &str) -> Self {
        // What the replicas say about the Lease (`lease_read_again_and_written_since`).
        capture_logs_with("info");
        let env = Env::start(prefix).await;
        let (port_a, port_b) = (free_port(), free_port());
        let (proxy, through_proxy) = apiserver_proxy().await;
        let a = replica_on(&env, through_proxy, "replica-a", port_a);
        let led = wait_until(TIMEOUT, || async {
            holder(&env).await.as_deref() == Some("replica-a") && leads(port_a).await
        })
        .await;
        assert!(led, "replica-a never led");
        env.create(&volume("before", 10, json!({}))).await;
        env.wait_for("before", TIMEOUT, "Ready under replica-a", is_ready)
            .await;

        let b = env.operator(&flags("replica-b", port_b).each_ref().map(String::as_str));
        let ready = wait_until(TIMEOUT, || async {
            port_answer(port_b, "/readyz")
                .await
                .is_some_and(|(s, _)| s == 200)
        })
        .await;
        assert!(ready, "the follower never answered /readyz with 200");
        assert!(!leads(port_b).await, "two leaders before the partition");
        Self {
            env,
            proxy,
            a,
            b,
            port_a,
            port_b,
        }
    }

    /// Cuts replica-a off from the apiserver with `fault`, creates `during` (the platform
    /// still reaches both), and waits for replica-a to stop saying it leads: when the cut
    /// began, and whether it stopped in time.
    async fn cut(&self, fault: Mode) -> (Instant, bool) {
        let cut_at = Instant::now();
        self.proxy.set(fault);
        self.env.create(&volume("during", 10, json!({}))).await;
        let stopped = wait_until(STOPS_WITHIN + Duration::from_secs(5), || async {
            !leads(self.port_a).await
        })
        .await;
        (cut_at, stopped)
    }

    /// Whether the replica on `port` is Ready and live, and its process runs.
    async fn ready_and_live(&self, port: u16) -> bool {
        let task = if port == self.port_a {
            &self.a
        } else {
            &self.b
        };
        !task.task.is_finished()
            && port_answer(port, "/readyz")
                .await
                .is_some_and(|(s, _)| s == 200)
            && port_answer(port, "/healthz")
                .await
                .is_some_and(|(s, _)| s == 200)
    }

    async fn finish(self) {
        self.a.stop().await;
        self.env.finish(self.b).await;
    }
}

async fn the_leader_partitioned_away_stops_before_the_other_leads(fault: Mode, prefix: &str) {
    let replicas = Replicas::start(prefix).await;
    let (env, proxy) = (&replicas.env, &replicas.proxy);
    let (port_a, port_b) = (replicas.port_a, replicas.port_b);

    let sampler = LeaderSampler::start(vec![port_a, port_b]);

    // The partition: replica-a alone loses the apiserver; the platform it still reaches.
    let (cut_at, stopped) = replicas.cut(fault).await;
    let stop_acting = cut_at.elapsed();
    assert!(
        stopped,
        "replica-a still leads {stop_acting:?} after the cut"
    );
    assert!(
        !leads(port_b).await,
        "replica-b led before replica-a stopped"
    );
    assert_eq!(
        holder(env).await.as_deref(),
        Some("replica-a"),
        "the Lease still names replica-a: it stopped before it expired"
    );

    // From here until replica-b leads, nobody acts: no platform call at all. The calls are
    // read before replica-b's gauge, which it sets before its controllers start.
    let quiet_from = env.calls().await;
    let mut quiet_until = quiet_from.clone();
    let deadline = Instant::now() + LEASE + TIMEOUT;
    let took_over = loop {
        let calls = env.calls().await;
        if leads(port_b).await {
            break true;
        }
        quiet_until = calls;
        if Instant::now() >= deadline {
            break false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let takeover = cut_at.elapsed();
    assert!(took_over, "replica-b never led");
    let meanwhile = calls_since(&quiet_from, &quiet_until);
    assert!(
        meanwhile.is_empty(),
        "platform calls after replica-a stopped and before replica-b led: {meanwhile:?}"
    );
    assert_eq!(holder(env).await.as_deref(), Some("replica-b"));
    eprintln!(
        "lease partition ({fault:?}): replica-a stopped acting {} ms after the cut; replica-b led {} ms after the cut",
        stop_acting.as_millis(),
        takeover.as_millis()
    );
    assert!(
        stop_acting <= STOPS_WITHIN,
        "replica-a stopped acting {stop_acting:?} after the cut"
    );
    assert!(
        takeover > stop_acting,
        "replica-b led ({takeover:?}) before replica-a stopped ({stop_acting:?})"
    );

    // What was created meanwhile is made, once, by the new leader.
    env.wait_for("during", TIMEOUT, "Ready under replica-b", is_ready)
        .await;
    assert_eq!(made_for(env, "during").await, 1);

    // The apiserver is back for replica-a: it reads a Lease another process renews, and
    // follows, in the same process, Ready and live.
    let creates_before = env.calls().await;
    proxy.set(Mode::Open);
    lease_read_again_and_written_since(env).await;
    let follows = wait_until(TIMEOUT, || replicas.ready_and_live(port_a)).await;
    assert!(
        follows,
        "replica-a is not Ready and live (or its process ended) after the apiserver came back"
    );
    assert!(
        !leads(port_a).await,
        "replica-a leads again beside replica-b"
    );
    assert!(leads(port_b).await);
    assert_eq!(holder(env).await.as_deref(), Some("replica-b"));

    // Nothing is made twice, by either.
    env.create(&volume("after", 10, json!({}))).await;
    env.wait_for("after", TIMEOUT, "Ready under replica-b", is_ready)
        .await;
    let create = common::backend::routes().create_volume;
    let creates: BTreeMap<_, _> = calls_since(&creates_before, &env.calls().await)
        .into_iter()
        .filter(|(route, _)| route == create)
        .collect();
    assert_eq!(
        creates,
        BTreeMap::from([(create.to_string(), 1)]),
        "only `after` is made"
    );
    for name in ["before", "during", "after"] {
        assert_eq!(made_for(env, name).await, 1, "{name} on the platform");
    }

    let sampled = sampler.finish().await;
    eprintln!(
        "lease partition ({fault:?}): {} samples of both leader gauges in {:?}, never both 1",
        sampled.samples, sampled.lasted
    );
    assert!(sampled.kept_up(), "too few samples: {sampled:?}");
    assert!(
        sampled.several.is_empty(),
        "both replicas said they led at {:?} after the cut",
        sampled.several
    );

    replicas.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_leader_cut_off_from_the_apiserver_stops_acting_before_the_other_leads_and_then_follows()
{
    the_leader_partitioned_away_stops_before_the_other_leads(Mode::Cut, "lease-cut").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_leader_whose_apiserver_hangs_stops_acting_before_the_other_leads_and_then_follows() {
    the_leader_partitioned_away_stops_before_the_other_leads(Mode::Stall, "lease-stall").await;
}

/// Cut off for less than a Lease's duration: the leader stops acting at its renew deadline,
/// and when the apiserver answers again before the Lease expired for the other replica, it
/// takes its own Lease back at once and acts again with fresh controllers, in the same
/// process; the other replica never leads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_leader_back_before_its_lease_expired_takes_it_back_and_acts_again() {
    let replicas = Replicas::start("lease-back").await;
    let (env, proxy) = (&replicas.env, &replicas.proxy);
    let (port_a, port_b) = (replicas.port_a, replicas.port_b);
    let sampler = LeaderSampler::start(vec![port_a, port_b]);

    let (cut_at, stopped) = replicas.cut(Mode::Cut).await;
    let stop_acting = cut_at.elapsed();
    assert!(
        stopped,
        "replica-a still leads {stop_acting:?} after the cut"
    );

    // Back at once: replica-a's Lease still names it, and has not expired for replica-b.
    proxy.set(Mode::Open);
    let back = wait_until(TIMEOUT, || async { leads(port_a).await }).await;
    let took_back = cut_at.elapsed();
    assert!(back, "replica-a never led again");
    eprintln!(
        "lease partition (brief cut): replica-a stopped acting {} ms after the cut and led again {} ms after it",
        stop_acting.as_millis(),
        took_back.as_millis()
    );
    assert!(
        took_back < LEASE,
        "replica-a took its Lease back {took_back:?} after the cut"
    );
    assert_eq!(holder(env).await.as_deref(), Some("replica-a"));

    // Its second term acts: the object created during the cut is made, once, and the
    // process is Ready and live with its restarted controllers.
    env.wait_for("during", TIMEOUT, "Ready under replica-a again", is_ready)
        .await;
    assert_eq!(made_for(env, "during").await, 1);
    assert!(replicas.ready_and_live(port_a).await);
    env.create(&volume("after", 10, json!({}))).await;
    env.wait_for("after", TIMEOUT, "Ready under replica-a again", is_ready)
        .await;
    for name in ["before", "during", "after"] {
        assert_eq!(made_for(env, name).await, 1, "{name} on the platform");
    }
    // Past the term replica-b saw: it follows a renewed Lease.
    tokio::time::sleep(LEASE.saturating_sub(cut_at.elapsed()) + Duration::from_secs(2)).await;
    assert!(!leads(port_b).await, "replica-b took over a renewed Lease");
    assert_eq!(holder(env).await.as_deref(), Some("replica-a"));

    let sampled = sampler.finish().await;
    assert!(sampled.kept_up(), "too few samples: {sampled:?}");
    assert!(
        sampled.several.is_empty(),
        "both replicas said they led at {:?} after the cut",
        sampled.several
    );
    replicas.finish().await;
}
