//! Leader handover end to end: two operators in-process with `--leader-election` on one
//! Lease of a real kube-apiserver, the emulator over real HTTP. The follower is Ready while
//! it waits (so that a rolling update can stop the leader); the leader, stopped by its stop
//! switch (what SIGTERM turns on in `run`), releases the Lease, and the follower leads
//! within 5 s (the figure is printed) and then acts, its `/readyz` answering 200
//! throughout. The same with the built binary: SIGTERM ends the leader's process within
//! seconds, and the other process leads. Run through `scripts/test.sh` (it needs
//! `KUBECONFIG`).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use common::lease::leads;
use common::operator::{Env, Operator, OperatorProcess, free_port, is_ready, volume};
use common::wait_until;

const TIMEOUT: Duration = Duration::from_secs(30);
/// The longest a handover may take, from the leader's stop to the follower leading.
const HANDOVER: Duration = Duration::from_secs(5);

fn replica(env: &Env, identity: &str, port: u16) -> Operator {
    env.operator(&[
        "--leader-election",
        &format!("--identity={identity}"),
        &format!("--metrics-addr=127.0.0.1:{port}"),
    ])
}

async fn status_of(url: &str) -> Option<u16> {
    Some(reqwest::get(url).await.ok()?.status().as_u16())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn the_follower_leads_within_5s_of_the_leader_stopping() {
    let env = Env::start("lease-handover").await;
    let (port_a, port_b) = (free_port(), free_port());
    let a = replica(&env, "replica-a", port_a);
    let led = wait_until(TIMEOUT, || async {
        common::lease::holder(&env).await.as_deref() == Some("replica-a")
    })
    .await;
    assert!(led, "replica-a never took the Lease");
    env.create(&volume("before", 10, json!({}))).await;
    env.wait_for("before", TIMEOUT, "Ready under replica-a", is_ready)
        .await;

    // The follower is Ready while it waits, and does not lead.
    let b = replica(&env, "replica-b", port_b);
    let readyz_b = format!("http://127.0.0.1:{port_b}/readyz");
    let ready = wait_until(TIMEOUT, || async {
        status_of(&readyz_b).await == Some(200)
    })
    .await;
    assert!(ready, "the follower never answered /readyz with 200");
    assert!(!leads(port_b).await, "two leaders");
    assert_eq!(
        common::lease::holder(&env).await.as_deref(),
        Some("replica-a")
    );

    // Watch the follower's /readyz through the handover.
    let watching = Arc::new(AtomicBool::new(true));
    let not_ready = tokio::spawn({
        let (watching, readyz_b) = (watching.clone(), readyz_b.clone());
        async move {
            let mut seen = Vec::new();
            while watching.load(Ordering::SeqCst) {
                match status_of(&readyz_b).await {
                    Some(200) => {}
                    other => seen.push(other),
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            seen
        }
    });

    // Stop the leader as SIGTERM would.
    let stopped_at = Instant::now();
    let Operator { stop, task, .. } = a;
    let _ = stop.send(true);
    let returned = tokio::spawn(async move {
        let result = task.await;
        (stopped_at.elapsed(), result)
    });
    let took_over = wait_until(HANDOVER * 2, || async {
        common::lease::holder(&env).await.as_deref() == Some("replica-b") && leads(port_b).await
    })
    .await;
    let handover = stopped_at.elapsed();
    eprintln!("lease handover: {} ms", handover.as_millis());
    assert!(took_over, "replica-b never led");
    assert!(
        handover < HANDOVER,
        "the follower led {handover:?} after the leader stopped"
    );
    let (took, result) = tokio::time::timeout(TIMEOUT, returned)
        .await
        .expect("the stopped leader returned")
        .expect("joined");
    eprintln!(
        "the stopped leader returned {} ms after its stop",
        took.as_millis()
    );
    let result = result.expect("the stopped leader's task");
    assert!(result.is_ok(), "the stopped leader failed: {result:?}");

    // The new leader acts.
    env.create(&volume("after", 10, json!({}))).await;
    env.wait_for("after", TIMEOUT, "Ready under replica-b", is_ready)
        .await;
    watching.store(false, Ordering::SeqCst);
    let seen = not_ready.await.unwrap();
    assert!(
        seen.is_empty(),
        "the follower's /readyz was not 200 during the handover: {seen:?}"
    );
    env.finish(b).await;
}

fn replica_process(env: &Env, identity: &str, port: u16) -> OperatorProcess {
    env.operator_process(&[
        "--leader-election",
        &format!("--identity={identity}"),
        &format!("--metrics-addr=127.0.0.1:{port}"),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn sigterm_ends_the_leaders_process_promptly_and_the_other_leads() {
    let env = Env::start("lease-sigterm").await;
    let (port_a, port_b) = (free_port(), free_port());
    let a = replica_process(&env, "process-a", port_a);
    let led = wait_until(TIMEOUT, || async {
        common::lease::holder(&env).await.as_deref() == Some("process-a") && leads(port_a).await
    })
    .await;
    assert!(led, "process-a never led");
    let b = replica_process(&env, "process-b", port_b);
    let ready = wait_until(TIMEOUT, || async {
        status_of(&format!("http://127.0.0.1:{port_b}/readyz")).await == Some(200)
    })
    .await;
    assert!(
        ready,
        "the follower process never answered /readyz with 200"
    );

    let terminated_at = Instant::now();
    let (exited_in, lead) = tokio::join!(
        async {
            a.terminate().await;
            terminated_at.elapsed()
        },
        async {
            wait_until(HANDOVER * 2, || async {
                common::lease::holder(&env).await.as_deref() == Some("process-b")
                    && leads(port_b).await
            })
            .await;
            terminated_at.elapsed()
        }
    );
    // `terminate` kills the process after 20 s: well before that, it exited by itself.
    eprintln!(
        "after SIGTERM: the leader's process exited within {} ms, the other led after {} ms",
        exited_in.as_millis(),
        lead.as_millis()
    );
    assert!(
        lead < HANDOVER,
        "the other process led {lead:?} after SIGTERM"
    );
    assert!(
        exited_in < Duration::from_secs(10),
        "the process took {exited_in:?} to exit after SIGTERM"
    );
    env.finish_process(b).await;
}
