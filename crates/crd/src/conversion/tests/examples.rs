//! Every manifest of `examples/` (in `v1beta1`) survives `v1beta1` -> `v1alpha1` -> `v1beta1`
//! unchanged, and what each becomes in `v1alpha1` survives the way back and forth too.

use std::fs;
use std::path::Path;

use serde_json::Value;

use super::super::convert;
use super::properties::same_object;

/// Every `gpucloud.io` object of every file of `examples/`, with its file's name.
fn examples() -> Vec<(String, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut files: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no examples in {}", dir.display());
    let mut objects = Vec::new();
    for file in files {
        let text = fs::read_to_string(&file).unwrap();
        let documents: Vec<Value> = serde_saphyr::from_multiple(&text)
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        objects.extend(
            documents
                .into_iter()
                .filter(|d| d["apiVersion"] == "gpucloud.io/v1beta1")
                .map(|d| (name.clone(), d)),
        );
    }
    objects
}

#[test]
fn every_example_survives_the_round_trip_unchanged() {
    let examples = examples();
    let kinds: std::collections::BTreeSet<&str> = examples
        .iter()
        .filter_map(|(_, o)| o["kind"].as_str())
        .collect();
    // The examples cover every kind, so this test covers every conversion.
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        [
            "Budget",
            "Cluster",
            "Endpoint",
            "NetworkVolume",
            "Pod",
            "RegistryCredential",
            "Template"
        ]
    );
    for (file, object) in examples {
        let alpha = convert(object.clone(), "gpucloud.io/v1alpha1")
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(alpha["apiVersion"], "gpucloud.io/v1alpha1", "{file}");
        let beta =
            convert(alpha.clone(), "gpucloud.io/v1beta1").unwrap_or_else(|e| panic!("{file}: {e}"));
        // The same object: the typed manifest (its defaults filled in), and nothing more.
        same_object(&object, &beta).unwrap_or_else(|e| panic!("{file}: {e}"));
        let alpha_again = convert(beta, "gpucloud.io/v1alpha1").unwrap();
        same_object(&alpha, &alpha_again).unwrap_or_else(|e| panic!("{file}: {e}"));
    }
}
