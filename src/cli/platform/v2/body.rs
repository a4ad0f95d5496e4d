//! Request bodies given whole on the command line: inline JSON or `@FILE`.

use anyhow::Context;
use serde::de::DeserializeOwned;

/// A request body given inline or as `@FILE`, in the document's JSON shape.
pub(super) fn read_body<T: DeserializeOwned>(raw: &str) -> anyhow::Result<T> {
    let text = match raw.strip_prefix('@') {
        Some(path) => {
            std::fs::read_to_string(path).with_context(|| format!("reading --body file {path}"))?
        }
        None => raw.to_owned(),
    };
    serde_json::from_str(&text).context("--body does not fit the request's shape")
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpucloud_platform::v2::{CreateTemplate, UpdatePod};

    #[test]
    fn bodies_read_inline_or_from_files() {
        let b: UpdatePod = read_body(r#"{"registry": null}"#).unwrap();
        assert_eq!(b.container.registry, Some(None));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.json");
        std::fs::write(&path, r#"{"name": "t", "image": "i"}"#).unwrap();
        let t: CreateTemplate = read_body(&format!("@{}", path.display())).unwrap();
        assert_eq!(t.name, "t");
        assert!(read_body::<CreateTemplate>("{}").is_err());
    }
}
