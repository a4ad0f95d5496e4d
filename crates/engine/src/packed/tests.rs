use super::*;
use gpucloud_crd::NetworkVolume;

/// A volume as the operator leaves it once it is Ready: claim, id, finalizer, four
/// conditions.
fn converged(name: &str, uid: &str, id: &str) -> NetworkVolume {
    let at = "2026-11-26T16:40:12Z";
    let condition = |type_: &str, status: &str, reason: &str, message: &str| {
        serde_json::json!({"type": type_, "status": status, "reason": reason,
            "message": message, "observedGeneration": 1, "lastTransitionTime": at})
    };
    serde_json::from_value(serde_json::json!({
        "apiVersion": "gpucloud.io/v1beta1",
        "kind": "NetworkVolume",
        "metadata": {
            "name": name, "namespace": "team-a", "uid": uid, "generation": 1,
            "resourceVersion": "4812093", "creationTimestamp": at,
            "finalizers": ["gpucloud.io/finalizer"],
            "annotations": {
                "gpucloud.io/external-id": id,
                "gpucloud.io/owner": "gpucloud-operator/gpucloud-operator@3f9a0c1d2e4b"
            }
        },
        "spec": {"sizeGb": 10, "dataCenterId": "EU-RO-1", "deletionPolicy": "Orphan"},
        "status": {
            "observedGeneration": 1, "id": id, "lastSyncTime": at,
            "name": format!("team-a-{name}-{}-i4c2f9e", &uid[..8]),
            "sizeGb": 10, "dataCenterId": "EU-RO-1", "type": "STANDARD",
            "conditions": [
                condition("Ready", "True", "Available", "The network volume is available."),
                condition("Synced", "True", "ReconcileSuccess", "The last pass reached the platform."),
                condition("Reconciling", "False", "Available", "Nothing to do."),
                condition("Stalled", "False", "Available", "Nothing blocks progress."),
            ]
        }
    }))
    .unwrap()
}

fn fresh(name: &str) -> NetworkVolume {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "gpucloud.io/v1beta1", "kind": "NetworkVolume",
        "metadata": {"name": name, "namespace": "team-a", "uid": "u-1", "generation": 1},
        "spec": {"sizeGb": 10, "dataCenterId": "EU-RO-1"}
    }))
    .unwrap()
}

/// `obj` packed as the cache of its kind packs it.
fn pack(codec: &'static Codec, obj: &NetworkVolume) -> Packed<NetworkVolume> {
    Packed::pack_with(codec, Shape::of_managed(obj), obj)
}

fn codec() -> &'static Codec {
    Box::leak(Box::new(Codec::new()))
}

fn json(obj: &NetworkVolume) -> serde_json::Value {
    serde_json::to_value(obj).unwrap()
}

#[test]
fn an_object_reads_back_whole() {
    let codec = codec();
    for obj in [
        fresh("data"),
        converged("data", "8d0c7c52-5f5e-4f0e-9a53-0f6c3b1e2a71", "vol-7q2m"),
        converged("logs", "1b2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f", "vol-k3x9"),
        fresh("later"),
    ] {
        let packed = pack(codec, &obj);
        assert_eq!(json(&packed.unpack_with(codec).unwrap()), json(&obj));
    }
}

#[test]
fn objects_are_plain_until_one_with_a_status_gives_the_dictionary() {
    let codec = codec();
    let before = pack(codec, &fresh("data"));
    assert_eq!(before.body[0], PLAIN, "no dictionary yet");
    let first = converged("data", "8d0c7c52-5f5e-4f0e-9a53-0f6c3b1e2a71", "vol-7q2m");
    pack(codec, &first);
    let other = converged("logs", "1b2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f", "vol-k3x9");
    let packed = pack(codec, &other);
    let whole = serde_json::to_vec(&other).unwrap().len();
    assert_eq!(
        packed.body[0], COMPRESSED_READY,
        "a Ready volume gives the dictionary"
    );
    // What differs from the dictionary: two names, a UID, an id.
    assert!(
        packed.packed_len() * 5 < whole,
        "{} bytes packed of {whole}",
        packed.packed_len()
    );
    // An object packed before the dictionary still reads back.
    assert_eq!(
        json(&before.unpack_with(codec).unwrap()),
        json(&fresh("data"))
    );
}

#[test]
fn a_damaged_body_is_an_error_not_a_panic() {
    let codec = codec();
    pack(
        codec,
        &converged("a", "8d0c7c52-5f5e-4f0e-9a53-0f6c3b1e2a71", "v"),
    );
    let mut packed = pack(
        codec,
        &converged("b", "1b2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f", "w"),
    );
    packed.body = vec![COMPRESSED, 1, 2, 3].into_boxed_slice();
    assert!(packed.unpack_with(codec).is_err());
    packed.body = Box::new([]);
    assert!(matches!(packed.unpack_with(codec), Err(PackError::Empty)));
}

/// A volume whose create is under way: a status, but not Ready.
fn creating(name: &str) -> NetworkVolume {
    let mut obj = fresh(name);
    obj.status = serde_json::from_value(serde_json::json!({
        "observedGeneration": 1,
        "conditions": [{"type": "Ready", "status": "False", "reason": "Creating",
            "message": "The network volume is being created.", "observedGeneration": 1,
            "lastTransitionTime": "2026-11-26T16:40:00Z"}]
    }))
    .unwrap();
    obj
}

#[test]
fn a_ready_object_gives_the_dictionary_from_then_on_and_older_bodies_still_read() {
    let codec = codec();
    let early = pack(codec, &creating("first"));
    let second = pack(codec, &creating("second"));
    assert_eq!(second.body[0], COMPRESSED, "against the creating object");
    let converged_early = pack(
        codec,
        &converged("data", "8d0c7c52-5f5e-4f0e-9a53-0f6c3b1e2a71", "vol-7q2m"),
    );
    assert_eq!(converged_early.body[0], COMPRESSED_READY);
    let other = converged("logs", "1b2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f", "vol-k3x9");
    let packed = pack(codec, &other);
    assert_eq!(packed.body[0], COMPRESSED_READY);

    // The same object against the creating dictionary alone is larger.
    let only_creating = self::codec();
    pack(only_creating, &creating("first"));
    let against_creating = pack(only_creating, &{
        let mut o = other.clone();
        // Not Ready, so that it does not become this codec's Ready dictionary.
        o.status.as_mut().unwrap().common.conditions.clear();
        o
    });
    assert_eq!(against_creating.body[0], COMPRESSED);
    assert!(
        packed.packed_len() < against_creating.packed_len(),
        "{} bytes against a Ready volume, {} against a creating one",
        packed.packed_len(),
        against_creating.packed_len()
    );

    for (body, obj) in [
        (&early, creating("first")),
        (&second, creating("second")),
        (&packed, other),
    ] {
        assert_eq!(json(&body.unpack_with(codec).unwrap()), json(&obj));
    }
}

#[test]
fn an_objects_shape_follows_its_status_and_ready_condition() {
    assert_eq!(Shape::of_managed(&fresh("data")), Shape::NoStatus);
    assert_eq!(Shape::of_managed(&creating("data")), Shape::WithStatus);
    let ready = converged("data", "8d0c7c52-5f5e-4f0e-9a53-0f6c3b1e2a71", "v");
    assert_eq!(Shape::of_managed(&ready), Shape::Ready);
    assert_eq!(
        Shape::of_status(Some(&[])),
        Shape::WithStatus,
        "no conditions yet"
    );
}

#[test]
fn an_object_with_no_status_offers_no_dictionary() {
    let codec = codec();
    let plain = Packed::pack_with(codec, Shape::NoStatus, &creating("first"));
    assert_eq!(plain.body[0], PLAIN, "its shape, not its status, decides");
    let packed = pack(codec, &creating("second"));
    assert_eq!(packed.body[0], COMPRESSED);
}
