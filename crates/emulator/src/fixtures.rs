//! Fixtures: the catalog (GPU types, stock, data centers) and the records the emulator
//! starts with. Built-in defaults live in `fixtures.yaml` beside this file; `--fixtures FILE`
//! replaces them with a YAML or JSON document of the same shape.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::model::{
    CpuTypeFixture, DataCenter, Delegation, EndpointRecord, GpuTypeFixture, NetworkVolume,
    PodFixture, PublicTemplate, RegistryAuth, Template,
};

const BUILT_IN: &str = include_str!("fixtures.yaml");

/// The catalog and initial state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Fixtures {
    #[serde(default = "default_user")]
    pub user_id: String,
    #[serde(default)]
    pub data_centers: Vec<DataCenter>,
    #[serde(default)]
    pub gpu_types: Vec<GpuTypeFixture>,
    /// CPU flavors for CPU pods (REST v2).
    #[serde(default)]
    pub cpu_types: Vec<CpuTypeFixture>,
    #[serde(default)]
    pub templates: Vec<Template>,
    /// The public template catalog (`GET /v2/catalog/templates`).
    #[serde(default)]
    pub public_templates: Vec<PublicTemplate>,
    #[serde(default)]
    pub network_volumes: Vec<NetworkVolume>,
    #[serde(default)]
    pub endpoints: Vec<EndpointRecord>,
    #[serde(default)]
    pub delegations: Vec<Delegation>,
    #[serde(default)]
    pub pods: Vec<PodFixture>,
    /// Container registry credentials (`password` is read here and never shown again).
    #[serde(default)]
    pub registries: Vec<RegistryAuth>,
}

fn default_user() -> String {
    "user_emulator".into()
}

#[derive(Debug, thiserror::Error)]
pub enum FixturesError {
    #[error("cannot read fixtures file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("fixtures file {path} is not valid JSON: {source}")]
    Json {
        path: String,
        source: serde_json::Error,
    },
    #[error("fixtures file {path} is not valid YAML: {message}")]
    Yaml { path: String, message: String },
    #[error("fixtures are inconsistent: {0}")]
    Inconsistent(String),
}

impl Default for Fixtures {
    fn default() -> Self {
        Self::built_in()
    }
}

impl Fixtures {
    /// The built-in catalog.
    pub fn built_in() -> Self {
        Self::from_yaml(BUILT_IN, "built-in fixtures").expect("built-in fixtures are valid")
    }

    /// Reads a YAML or JSON file (JSON when the name ends in `.json` or the text starts with
    /// `{`).
    pub fn load(path: &Path) -> Result<Self, FixturesError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| FixturesError::Read {
            path: name.clone(),
            source,
        })?;
        let is_json =
            path.extension().is_some_and(|e| e == "json") || text.trim_start().starts_with('{');
        let fixtures = if is_json {
            serde_json::from_str(&text).map_err(|source| FixturesError::Json {
                path: name.clone(),
                source,
            })?
        } else {
            Self::from_yaml(&text, &name)?
        };
        fixtures.check()?;
        Ok(fixtures)
    }

    fn from_yaml(text: &str, name: &str) -> Result<Self, FixturesError> {
        serde_saphyr::from_str(text).map_err(|e| FixturesError::Yaml {
            path: name.to_string(),
            message: e.to_string(),
        })
    }

    /// Cross-references: every id a record points at exists.
    pub fn check(&self) -> Result<(), FixturesError> {
        let dc = |id: &str| self.data_centers.iter().any(|d| d.id == id);
        let gpu = |id: &str| self.gpu_types.iter().any(|g| g.id == id);
        for g in &self.gpu_types {
            for s in &g.stock {
                if !dc(&s.data_center_id) {
                    return Err(FixturesError::Inconsistent(format!(
                        "gpu type {:?} has stock in unknown data center {:?}",
                        g.id, s.data_center_id
                    )));
                }
            }
        }
        for c in &self.cpu_types {
            if c.vcpu_min < 1 || c.vcpu_min > c.vcpu_max {
                return Err(FixturesError::Inconsistent(format!(
                    "cpu type {:?} has vcpuMin {} above vcpuMax {}",
                    c.id, c.vcpu_min, c.vcpu_max
                )));
            }
            if let Some(s) = c.stock.iter().find(|s| !dc(&s.data_center_id)) {
                return Err(FixturesError::Inconsistent(format!(
                    "cpu type {:?} has stock in unknown data center {:?}",
                    c.id, s.data_center_id
                )));
            }
        }
        if let Some(t) = self
            .public_templates
            .iter()
            .find(|p| self.templates.iter().any(|t| t.id == p.id))
        {
            return Err(FixturesError::Inconsistent(format!(
                "public template {:?} has the id of an account template",
                t.id
            )));
        }
        for v in &self.network_volumes {
            if !dc(&v.data_center_id) {
                return Err(FixturesError::Inconsistent(format!(
                    "network volume {:?} is in unknown data center {:?}",
                    v.id, v.data_center_id
                )));
            }
        }
        for e in &self.endpoints {
            if !self.templates.iter().any(|t| t.id == e.template_id) {
                return Err(FixturesError::Inconsistent(format!(
                    "endpoint {:?} uses unknown template {:?}",
                    e.id, e.template_id
                )));
            }
            if let Some(bad) = e.gpu_type_ids.iter().find(|id| !gpu(id)) {
                return Err(FixturesError::Inconsistent(format!(
                    "endpoint {:?} names unknown gpu type {bad:?}",
                    e.id
                )));
            }
        }
        for p in &self.pods {
            if !gpu(&p.gpu_type_id) {
                return Err(FixturesError::Inconsistent(format!(
                    "pod {:?} names unknown gpu type {:?}",
                    p.name, p.gpu_type_id
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_fixtures_are_complete() {
        let f = Fixtures::built_in();
        f.check().unwrap();
        for id in [
            "NVIDIA GeForce RTX 4090",
            "NVIDIA A40",
            "NVIDIA A100 80GB PCIe",
            "NVIDIA H100 80GB HBM3",
        ] {
            assert!(f.gpu_types.iter().any(|g| g.id == id), "{id} missing");
        }
        assert!(f.data_centers.iter().any(|d| d.id == "EU-RO-1"));
        assert!(f.data_centers.iter().any(|d| d.id == "US-TX-3"));
        assert!(!f.templates.is_empty());
        assert!(!f.delegations.is_empty());
        assert!(!f.network_volumes.is_empty());
        assert!(!f.endpoints.is_empty());
        assert_eq!(f.endpoints[0].idle_timeout, 5);
        assert_eq!(f.endpoints[0].scaler_value, 4);
    }

    #[test]
    fn json_and_yaml_files_load() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("f.json");
        std::fs::write(
            &json,
            r#"{"dataCenters":[{"id":"X-1","name":"x"}],"gpuTypes":[{"id":"G","displayName":"G","memoryInGb":8,"stock":[{"dataCenterId":"X-1","secureCloud":true,"machines":1}]}]}"#,
        )
        .unwrap();
        let f = Fixtures::load(&json).unwrap();
        assert_eq!(f.gpu_types[0].stock[0].gpus_per_machine, 8);
        let yaml = dir.path().join("f.yaml");
        std::fs::write(
            &yaml,
            "dataCenters: []\nnetworkVolumes:\n  - {id: v, name: n, size: 1, dataCenterId: NOPE}\n",
        )
        .unwrap();
        assert!(matches!(
            Fixtures::load(&yaml),
            Err(FixturesError::Inconsistent(_))
        ));
        std::fs::write(&yaml, "bogusField: 1\n").unwrap();
        assert!(matches!(
            Fixtures::load(&yaml),
            Err(FixturesError::Yaml { .. })
        ));
    }
}
