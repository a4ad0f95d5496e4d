//! The committed CRD YAML under `crds/` must be exactly what the code generates, so that
//! `kubectl apply -f crds/` installs the API the operator was built against.

use std::path::Path;

/// Kustomize and Helm read files only inside their own folders, so the CRDs are committed
/// three times; all three must be what the code generates.
const COPIES: [&str; 3] = [
    "crds/gpucloud.io.yaml",
    "deploy/crds/gpucloud.io.yaml",
    "deploy/helm/gpucloud-operator/crds/gpucloud.io.yaml",
];

#[test]
fn committed_crds_match_the_code() {
    let generated = gpucloud_operator::kinds::crds_yaml().expect("CRDs serialise to YAML");
    for copy in COPIES {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(copy);
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            generated == committed,
            "{copy} is out of date: run `cargo run -- crds > {copy}` for each of {COPIES:?} and commit them"
        );
    }
}

/// The field reference is generated from the same CRDs, so it cannot drift from them.
#[test]
fn committed_field_reference_matches_the_code() {
    let generated = gpucloud_operator::kinds::reference_markdown();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/reference.md");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        generated == committed,
        "docs/reference.md is out of date: run `cargo run -- crds --reference > docs/reference.md` and commit it"
    );
}

#[test]
fn no_unsigned_integer_formats() {
    // schemars emits uint32/uint64 for unsigned types; the apiserver accepts them but
    // they are noise in `kubectl explain`, so the API uses signed types only.
    let yaml = gpucloud_operator::kinds::crds_yaml().unwrap();
    assert!(
        !yaml.contains("format: uint"),
        "an unsigned integer format slipped into the CRDs"
    );
}
