//! The committed CRD YAML under `crds/` must be exactly what the code generates, so that
//! `kubectl apply -f crds/` installs the API the operator was built against.

use std::path::Path;

#[test]
fn committed_crds_match_the_code() {
    let generated = gpucloud_operator::crd::to_yaml().expect("CRDs serialise to YAML");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("crds/gpucloud.io.yaml");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        generated == committed,
        "crds/gpucloud.io.yaml is out of date: run `cargo run -- crds > crds/gpucloud.io.yaml` and commit it"
    );
}

#[test]
fn no_unsigned_integer_formats() {
    // schemars emits uint32/uint64 for unsigned types; the apiserver accepts them but
    // they are noise in `kubectl explain`, so the API uses signed types only.
    let yaml = gpucloud_operator::crd::to_yaml().unwrap();
    assert!(
        !yaml.contains("format: uint"),
        "an unsigned integer format slipped into the CRDs"
    );
}
