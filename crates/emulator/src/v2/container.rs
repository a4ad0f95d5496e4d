//! The document's `ContainerConfig` (image, args, disk, ports, env, registry) as templates
//! and serverless endpoints take it: schema checks (422), rule checks against the world
//! (400) and applying a create or patch to stored settings.

use std::collections::BTreeMap;

use super::request::Violations;
use super::rules::Rules;
use crate::model::ContainerSettings;
use crate::pods::parse_ports;
use crate::state::World;

/// The container fields of a request body; `None` = absent. `registry` is nullable:
/// `Some(None)` clears it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContainerPatch {
    pub image: Option<String>,
    pub args: Option<String>,
    pub disk: Option<i64>,
    pub env: Option<BTreeMap<String, String>>,
    pub ports: Option<Vec<String>>,
    pub registry: Option<Option<String>>,
}

/// The [`ContainerPatch`] of a request body that carries the document's container fields
/// (`image`, `args`, `disk`, `env`, `ports`, `registry`) as its own: endpoint and template
/// bodies declare them alike, each in its own struct, because serde's `flatten` does not go
/// with `deny_unknown_fields`.
macro_rules! container_patch_of {
    ($body:expr) => {
        $crate::v2::container::ContainerPatch {
            image: $body.image.clone(),
            args: $body.args.clone(),
            disk: $body.disk,
            env: $body.env.clone(),
            ports: $body.ports.clone(),
            registry: $body.registry.clone(),
        }
    };
}
pub(crate) use container_patch_of;

impl ContainerPatch {
    /// Schema bounds: `disk` at least 1.
    pub fn schema(&self, v: &mut Violations) {
        v.range(self.disk, "disk", Some(1), None);
    }

    /// Rules: a non-empty image, ports as `port/protocol`, a registry credential that
    /// exists. The disk has no upper bound (the document gives only `minimum: 1`).
    pub fn rules(&self, world: &World, r: &mut Rules) {
        if let Some(image) = &self.image {
            r.check(!image.trim().is_empty(), "image", "must not be empty");
        }
        if let Some(ports) = &self.ports
            && let Err(e) = parse_ports(&ports.join(","))
        {
            r.fail("ports", e.to_string().trim_start_matches("ports: "));
        }
        if let Some(Some(id)) = &self.registry
            && !id.is_empty()
            && !world.registries.contains_key(id)
        {
            r.fail(
                "registry",
                format!("unknown container registry credential {id:?}"),
            );
        }
    }

    /// Writes the present fields over `c` (`env` is replaced whole; an empty `registry`
    /// id, like null, means no credential).
    pub fn apply(self, c: &mut ContainerSettings) {
        if let Some(image) = self.image {
            c.image = image;
        }
        if let Some(args) = self.args {
            c.args = args;
        }
        if let Some(disk) = self.disk {
            c.disk = disk.max(0) as u64;
        }
        if let Some(env) = self.env {
            c.env = env;
        }
        if let Some(ports) = self.ports {
            c.ports = ports;
        }
        if let Some(registry) = self.registry {
            c.registry = registry.filter(|id| !id.is_empty());
        }
    }

    /// Body fields over a template's settings, as a create or a patch naming `templateId`
    /// applies them: body fields win, `env` is merged per key with the body winning.
    pub fn over_template(self, template: &ContainerSettings) -> Self {
        let mut env = template.env.clone();
        env.extend(self.env.unwrap_or_default());
        Self {
            image: Some(self.image.unwrap_or_else(|| template.image.clone())),
            args: Some(self.args.unwrap_or_else(|| template.args.clone())),
            disk: Some(self.disk.unwrap_or(template.disk as i64)),
            env: Some(env),
            ports: Some(self.ports.unwrap_or_else(|| template.ports.clone())),
            registry: Some(self.registry.unwrap_or_else(|| template.registry.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::Fixtures;

    fn world() -> World {
        World::from_fixtures(&Fixtures::built_in()).unwrap()
    }

    #[test]
    fn template_settings_under_body_fields() {
        let template = ContainerSettings {
            image: "base:1".into(),
            args: "serve".into(),
            disk: 20,
            ports: vec!["8000/http".into()],
            env: BTreeMap::from([("A".into(), "t".into()), ("B".into(), "t".into())]),
            registry: Some("reg".into()),
        };
        let body = ContainerPatch {
            image: Some("mine:2".into()),
            env: Some(BTreeMap::from([("B".into(), "body".into())])),
            registry: Some(None),
            ..ContainerPatch::default()
        };
        let mut c = ContainerSettings::default();
        body.over_template(&template).apply(&mut c);
        assert_eq!(c.image, "mine:2");
        assert_eq!((c.args.as_str(), c.disk), ("serve", 20));
        assert_eq!(c.env["A"], "t");
        assert_eq!(c.env["B"], "body");
        assert_eq!(c.registry, None);
    }

    #[test]
    fn rules_name_the_field() {
        let w = world();
        let patch = ContainerPatch {
            image: Some(" ".into()),
            // No rule of the document bounds the disk from above.
            disk: Some(i64::MAX),
            ports: Some(vec!["eighty".into()]),
            registry: Some(Some("nope".into())),
            ..ContainerPatch::default()
        };
        let mut r = Rules::new();
        patch.rules(&w, &mut r);
        let errors = r.finish().unwrap_err().errors;
        for field in ["image:", "ports:", "registry:"] {
            assert!(
                errors.iter().any(|e| e.starts_with(field)),
                "{field} {errors:?}"
            );
        }
        assert!(!errors.iter().any(|e| e.starts_with("disk")), "{errors:?}");
        let mut v = Violations::new();
        ContainerPatch {
            disk: Some(0),
            ..ContainerPatch::default()
        }
        .schema(&mut v);
        assert!(!v.is_empty());
    }
}
