//! Unit tests of the serverless listing: its bytes are those the listing built under the
//! world's lock through one `serde_json::Value`, and a write shows in the next listing.

use super::*;
use crate::EmulatorConfig;
use crate::state::Emulator;

const ORIGIN: &str = "http://127.0.0.1:9";

/// The listing as it was built before it left the lock: one `Value` for the whole answer.
fn built_in_one_value(app: &App) -> Vec<u8> {
    let world = app.world.lock();
    let endpoints: Vec<view::EndpointView> = world
        .endpoints
        .values()
        .map(|e| view::endpoint(e, ORIGIN, &app.clock))
        .collect();
    serde_json::to_vec(&serde_json::json!({ "endpoints": endpoints })).unwrap()
}

fn ids_listed(bytes: &[u8]) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_slice(bytes).unwrap();
    v["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn the_listing_keeps_its_bytes_and_shows_every_write() {
    let app = Emulator::new(EmulatorConfig::default()).unwrap();
    let before = endpoints_listing(&app, ORIGIN);
    assert_eq!(before, built_in_one_value(&app));
    assert!(!ids_listed(&before).is_empty());

    // Enough endpoints that the listing is written in two halves on two threads.
    {
        let mut world = app.world.lock();
        let first = world.endpoints.values().next().cloned().unwrap();
        for i in 0..2_500 {
            let mut e = first.clone();
            e.id = format!("ep-many{i:05}");
            e.name = format!("many-{i}");
            world.endpoints.insert(e.id.clone(), e);
        }
    }
    let many = endpoints_listing(&app, ORIGIN);
    assert_eq!(many, built_in_one_value(&app));
    assert_eq!(ids_listed(&many).len(), ids_listed(&before).len() + 2_500);

    // A rename and a delete show in the next listing.
    {
        let mut world = app.world.lock();
        world.endpoints.get_mut("ep-many00007").unwrap().name = "renamed".into();
        world.endpoints.remove("ep-many00008");
    }
    let after = endpoints_listing(&app, ORIGIN);
    assert_eq!(after, built_in_one_value(&app));
    let v: serde_json::Value = serde_json::from_slice(&after).unwrap();
    let listed = v["endpoints"].as_array().unwrap();
    assert!(listed.iter().any(|e| e["name"] == "renamed"));
    assert!(!listed.iter().any(|e| e["id"] == "ep-many00008"));
}

/// The document gives an endpoint's `timeout` no bounds: below 5 s and above 7 days (the
/// seed's job API's range) are kept as sent; a negative one, with no meaning given, as 0.
#[test]
fn any_timeout_is_accepted() {
    let world = crate::state::World::from_fixtures(&crate::fixtures::Fixtures::built_in()).unwrap();
    for (timeout, kept) in [(10_i64, 10_u64), (0, 0), (1 << 45, 1 << 45), (-1, 0)] {
        let body: body::EndpointBody = crate::v2::request::parse_body(
            serde_json::json!({
                "name": "e", "type": "QUEUE", "image": "i", "gpu": {"pools": ["ADA_24"]},
                "scaling": {"type": "QUEUE_DELAY", "queueDelay": 4}, "timeout": timeout,
            })
            .to_string()
            .as_bytes(),
        )
        .unwrap();
        let created = plan::plan_create(body, &world, 0).unwrap();
        assert_eq!(created.record.execution_timeout_ms, kept, "{timeout}");
    }
}

/// The document bounds a name's length, the worker counts, the scaler values, the disk and
/// the GPUs per worker only from below: values far above v1's limits (191 characters, 1000
/// workers, 3600, 1000 GB, 8 GPUs) are kept as sent and shown as sent. The job runtime
/// runs at most `RUNTIME_WORKERS_MAX` workers of them at once.
#[test]
fn values_above_v1s_limits_are_kept_as_sent() {
    let world = crate::state::World::from_fixtures(&crate::fixtures::Fixtures::built_in()).unwrap();
    let name = "n".repeat(300);
    let big = i64::MAX;
    let plan = |scaling: serde_json::Value| {
        let body: body::EndpointBody = crate::v2::request::parse_body(
            serde_json::json!({
                "name": name, "type": "QUEUE", "image": "i", "disk": big,
                "gpu": {"pools": ["ADA_24"], "count": 1_000_000},
                "workers": {"min": 5000, "max": big}, "scaling": scaling,
            })
            .to_string()
            .as_bytes(),
        )
        .unwrap();
        plan::plan_create(body, &world, 0).unwrap().record
    };
    let e = plan(serde_json::json!({"type": "REQUEST_COUNT", "requestCount": big}));
    assert_eq!(e.name, name);
    assert_eq!((e.gpu_count, e.container.disk), (1_000_000, big as u64));
    assert_eq!((e.workers_min, e.workers_max), (5000, big as u64));
    assert_eq!(e.scaler_value, big as u64);
    let shown =
        serde_json::to_value(view::endpoint(&e, ORIGIN, &crate::clock::Clock::new(1.0))).unwrap();
    assert_eq!(shown["gpu"]["count"], 1_000_000);
    assert_eq!(shown["workers"]["max"], big);
    assert_eq!(shown["scaling"]["requestCount"], big);
    assert_eq!(shown["disk"], big);
    let runtime = crate::world::endpoints::worker_settings(&e);
    assert_eq!(
        (runtime.min, runtime.max, runtime.scaler_value),
        (1000, 1000, u32::MAX)
    );

    let e = plan(serde_json::json!({"type": "QUEUE_DELAY", "queueDelay": 1e9}));
    assert_eq!(e.queue_delay, Some(1e9));
    assert_eq!(e.scaler_value, 1_000_000_000);
}
