//! Unit tests of the handler's `myself { pods }`: its bytes are async-graphql's answer to the
//! same document, its pods those of the ordinary `pod(input:)` resolvers, and every document
//! it cannot be sure of is left to async-graphql.

use async_graphql::parser::parse_query;
use async_graphql::{Request, Value};

use super::*;
use crate::EmulatorConfig;
use crate::graphql::schema;
use crate::pods::{CloudChoice, DeployRequest};
use crate::state::Emulator;
use crate::world::clusters::{ClusterKind, ClusterSpec};

/// The operator's fragment of pod fields (crates/platform), as it sends it.
const POD_FIELDS: &str = include_str!("../../platform/src/graphql/documents/pod_fields.graphql");
/// The operator's `myself { pods }` document.
const OPERATORS: &str = concat!(
    include_str!("../../platform/src/graphql/documents/my_pods.graphql"),
    include_str!("../../platform/src/graphql/documents/pod_fields.graphql")
);
/// The official SDK's get_pods() selection.
const SDK_SELECTION: &str = "id containerDiskInGb costPerHr desiredStatus dockerArgs dockerId env gpuCount imageName lastStatusChange machineId memoryInGb name podType port ports uptimeSeconds vcpuCount volumeInGb volumeMountPath runtime { ports { ip isIpPublic privatePort publicPort type } } machine { gpuDisplayName }";
/// Aliases, an inline fragment, `__typename` at every level, fields in another order.
const ODD_SELECTION: &str = "__typename key: id ... on Pod { name templateId networkVolumeId } machine { __typename secureCloud dc: dataCenterId podHostId gpuTypeId } runtime { __typename container { memoryPercent cpuPercent } gpus { memoryUtilPercent id gpuUtilPercent } uptimeInSeconds ports { type publicPort } }";

/// A world whose pods are in every state a listing shows differently, with a cluster whose
/// members the seed surface does not list; the ids of the standalone pods.
fn world_of_pods() -> (App, Vec<String>) {
    let app = Emulator::new(EmulatorConfig {
        // A clock that stands still unless advanced: both answers see the same instant.
        time_scale: 1e-9,
        pod_boot_ms: 10_000,
        ..EmulatorConfig::default()
    })
    .unwrap();
    let deploy = |name: &str, gpus: i32, ports: &str| {
        let now = app.clock.now();
        let mut world = app.world.lock();
        let req = DeployRequest {
            name: Some(name.into()),
            image_name: Some("runpod/pytorch:2.8".into()),
            gpu_type_id: Some("NVIDIA A40".into()),
            gpu_count: Some(gpus),
            cloud: CloudChoice::All,
            ports: Some(ports.into()),
            env: vec![
                ("A".into(), "1".into()),
                ("QUOTE".into(), "\"x\\y\"".into()),
            ],
            ..DeployRequest::default()
        };
        world.cloud.deploy(req, now).unwrap().id.clone()
    };
    let booted = deploy("booted \"one\" \u{e9}", 2, "8888/http,22/tcp");
    let stopped = deploy("stopped", 1, "22/tcp");
    let failing = deploy("failing", 1, "");
    let moved = deploy("machine gone", 1, "8888/http");
    {
        let now = app.clock.now();
        let mut world = app.world.lock();
        let spec = ClusterSpec {
            name: "c".into(),
            kind: ClusterKind::Ray,
            pod_count: 2,
            member: DeployRequest {
                image_name: Some("img".into()),
                gpu_type_id: Some("NVIDIA GeForce RTX 4090".into()),
                gpu_count: Some(1),
                ..DeployRequest::default()
            },
        };
        world.create_cluster(spec, now).unwrap();
        let p = world.cloud.pod_mut(&booted).unwrap();
        p.gpu_util_percent = Some(42.5);
        p.support_public_ip = false;
        p.network_volume_id = Some("nv-1".into());
        p.template_id = Some("tmpl-1".into());
        p.volume_mount_path = None;
        world.cloud.pod_mut(&failing).unwrap().start_failure =
            Some(crate::StartFailure::ImageNotFound);
        world.cloud.pod_mut(&moved).unwrap().machine_id = "gone".into();
        world.cloud.stop(&stopped, now).unwrap();
    }
    app.clock.advance(65_000);
    // Deployed after the others: not booted yet.
    let booting = deploy("booting", 1, "22/tcp");
    app.clock.advance(3_000);
    (app, vec![booted, stopped, failing, moved, booting])
}

/// async-graphql's answer to `query`, as the handler writes it.
async fn executed(app: &App, query: &str) -> Vec<u8> {
    let response = schema()
        .execute(Request::new(query).data(app.clone()))
        .await;
    assert!(response.errors.is_empty(), "{query}: {:?}", response.errors);
    serde_json::to_vec(&response).unwrap()
}

fn recognised(query: &str) -> Option<MyPods> {
    MyPods::recognise(&parse_query(query).unwrap(), None, true)
}

/// The pods of an answer, each written back as JSON in its own key order.
fn pods_of(answer: &[u8], myself: &str, pods: &str) -> Vec<String> {
    let v: Value = serde_json::from_slice(answer).unwrap();
    let Value::Object(data) = &v else { panic!() };
    let Value::Object(me) = &data["data"] else {
        panic!()
    };
    let Value::Object(me) = &me[myself] else {
        panic!()
    };
    let Value::List(pods) = &me[pods] else {
        panic!()
    };
    pods.iter()
        .map(|p| serde_json::to_string(p).unwrap())
        .collect()
}

#[tokio::test]
async fn the_answer_is_async_graphqls_byte_for_byte() {
    let (app, ids) = world_of_pods();
    let documents = [
        (
            OPERATORS.to_string(),
            "myself",
            "pods",
            "...PodFields",
            POD_FIELDS,
        ),
        (
            format!("query myPods {{ myself {{ pods {{ {SDK_SELECTION} }} }} }}"),
            "myself",
            "pods",
            SDK_SELECTION,
            "",
        ),
        (
            format!("{{ me: myself {{ all: pods {{ {ODD_SELECTION} }} }} }}"),
            "me",
            "all",
            ODD_SELECTION,
            "",
        ),
    ];
    for (query, myself, pods, selection, fragments) in &documents {
        let fast = recognised(query)
            .unwrap_or_else(|| panic!("not answered by the handler: {query}"))
            .answer(&app);
        let slow = executed(&app, query).await;
        assert_eq!(
            String::from_utf8(fast.clone()).unwrap(),
            String::from_utf8(slow).unwrap()
        );
        // Each pod as the ordinary resolvers show it, with the same selection.
        let listed = pods_of(&fast, myself, pods);
        assert_eq!(listed.len(), ids.len(), "cluster members are not listed");
        for (id, listed) in ids.iter().zip(&listed) {
            let one =
                format!("{{ pod(input: {{podId: \"{id}\"}}) {{ {selection} }} }}\n{fragments}");
            let single = executed(&app, &one).await;
            let single = String::from_utf8(single).unwrap();
            let single = single
                .strip_prefix("{\"data\":{\"pod\":")
                .and_then(|s| s.strip_suffix("}}"))
                .unwrap();
            assert_eq!(listed, single, "{id}");
        }
    }
    // The states differ where the answer does: every branch above was written.
    let operators = pods_of(
        &recognised(OPERATORS).unwrap().answer(&app),
        "myself",
        "pods",
    );
    let pod = |i: usize| serde_json::from_str::<serde_json::Value>(&operators[i]).unwrap();
    let booted = pod(0);
    assert_eq!(booted["runtime"]["gpus"][1]["gpuUtilPercent"], 42.5);
    assert_eq!(booted["runtime"]["ports"][0]["isIpPublic"], false);
    assert_eq!(booted["networkVolumeId"], "nv-1");
    assert!(booted["volumeMountPath"].is_null());
    assert!(booted["name"].as_str().unwrap().contains('"'));
    assert_eq!(pod(1)["desiredStatus"], "EXITED");
    for i in [1, 2, 4] {
        assert!(pod(i)["runtime"].is_null(), "{i}");
    }
    assert_eq!(pod(3)["machine"]["dataCenterId"], "");
    assert!(pod(3)["runtime"]["ports"][0]["ip"] == "");
    assert!(
        pod(4)["lastStatusChange"]
            .as_str()
            .unwrap()
            .contains("GMT+0000")
    );
}

#[tokio::test]
async fn an_empty_listing_is_async_graphqls_too() {
    // The built-in fixtures hold no pods.
    let app = Emulator::new(EmulatorConfig::default()).unwrap();
    let fast = recognised(OPERATORS).unwrap().answer(&app);
    assert_eq!(fast, executed(&app, OPERATORS).await);
    assert_eq!(fast, br#"{"data":{"myself":{"pods":[]}}}"#);
}

#[test]
fn documents_it_cannot_be_sure_of_are_left_to_async_graphql() {
    let taken = |q: &str| recognised(q).is_some();
    assert!(taken("{ myself { pods { id } } }"));
    assert!(taken(
        "query Named { myself { pods { ... on Pod { id } } } }"
    ));
    for q in [
        // Two root fields, or more than `pods` under `myself`.
        "{ myself { pods { id } } pod(input: {podId: \"x\"}) { id } }",
        "{ myself { id pods { id } } }",
        "{ myself { __typename pods { id } } }",
        "{ myself { networkVolumes { id } } }",
        // Directives, arguments, variables.
        "{ myself { pods { id @skip(if: true) } } }",
        "{ myself @include(if: true) { pods { id } } }",
        "{ myself { pods @include(if: true) { id } } }",
        "query($x: Boolean) { myself { pods { id } } }",
        "{ myself { pods(first: 1) { id } } }",
        // Keys repeated (merged or refused), fields the type does not have.
        "{ myself { pods { id id } } }",
        "{ myself { pods { id ... on Pod { id } } } }",
        "{ myself { pods { nope } } }",
        "{ myself { pods { machine } } }",
        "{ myself { pods { id { x } } } }",
        // Fragments unused, spread twice, on another type, in a cycle.
        "fragment F on Pod { id } { myself { pods { name } } }",
        "fragment F on Pod { id } { myself { pods { ...F machine { podHostId } ...F } } }",
        "fragment F on PodMachineInfo { podHostId } { myself { pods { ...F } } }",
        "fragment F on Pod { ...F } { myself { pods { ...F } } }",
        "{ myself { pods { ...Missing } } }",
        // Not one query.
        "mutation { podStop(input: {podId: \"x\"}) { id } }",
        "query A { myself { pods { id } } } query B { myself { pods { id } } }",
    ] {
        assert!(!taken(q), "{q}");
    }
    let doc = parse_query("query Named { myself { pods { id } } }").unwrap();
    assert!(MyPods::recognise(&doc, Some("Named"), true).is_some());
    assert!(MyPods::recognise(&doc, Some("Other"), true).is_none());
    assert!(MyPods::recognise(&doc, None, false).is_none());
    let anonymous = parse_query("{ myself { pods { id } } }").unwrap();
    assert!(MyPods::recognise(&anonymous, Some("Named"), true).is_none());
}
