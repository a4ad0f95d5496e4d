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
