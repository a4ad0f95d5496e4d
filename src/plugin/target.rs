//! `KIND/NAME` as kubectl spells it (`gpod/trainer`, `pod.gpucloud.io/trainer`,
//! `endpoints/infer`), resolved against the registered kinds' own names, so a kind added
//! to the list is addressable without a change here.

use anyhow::bail;
use kube::api::{Api, ApiResource, DynamicObject};

/// An object the command is about.
#[derive(Debug, Clone)]
pub struct Target {
    pub resource: ApiResource,
    pub name: String,
}

impl Target {
    /// Parses `KIND/NAME` where KIND is a kind's name, plural, singular or short name, with
    /// or without `.gpucloud.io`.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let Some((kind, name)) = text.split_once('/') else {
            bail!("{text:?} is not KIND/NAME, such as gpod/trainer");
        };
        if name.is_empty() {
            bail!("{text:?} names no object after the /");
        }
        let wanted = kind
            .trim_end_matches(&format!(".{}", gpucloud_crd::GROUP))
            .to_lowercase();
        for registered in crate::kinds::KINDS {
            let crd = (registered.crd)();
            let names = &crd.spec.names;
            let aliases = [
                Some(names.kind.to_lowercase()),
                Some(names.plural.clone()),
                names.singular.clone(),
            ]
            .into_iter()
            .flatten()
            .chain(names.short_names.clone().unwrap_or_default());
            if aliases.into_iter().any(|a| a == wanted) {
                let version = crd.spec.versions.first().map(|v| v.name.clone());
                let resource = ApiResource {
                    group: crd.spec.group.clone(),
                    version: version.clone().unwrap_or_default(),
                    api_version: format!("{}/{}", crd.spec.group, version.unwrap_or_default()),
                    kind: names.kind.clone(),
                    plural: names.plural.clone(),
                };
                return Ok(Self {
                    resource,
                    name: name.to_string(),
                });
            }
        }
        bail!(
            "{kind:?} is not a gpucloud kind; use one of: {}",
            crate::kinds::KINDS
                .iter()
                .map(|k| k.short_names().join("|"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }

    /// The object, from `namespace`.
    pub async fn get(&self, kube: &kube::Client, namespace: &str) -> anyhow::Result<DynamicObject> {
        let api: Api<DynamicObject> = Api::namespaced_with(kube.clone(), namespace, &self.resource);
        match api.get_opt(&self.name).await? {
            Some(object) => Ok(object),
            None => bail!(
                "{} {namespace}/{} does not exist",
                self.resource.kind,
                self.name
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_spellings_of_a_kind_resolve() {
        for text in [
            "gpod/t",
            "pod/t",
            "pods/t",
            "Pod.gpucloud.io/t",
            "pods.gpucloud.io/t",
        ] {
            let target = Target::parse(text).unwrap();
            assert_eq!(
                (target.resource.kind.as_str(), target.name.as_str()),
                ("Pod", "t"),
                "{text}"
            );
        }
        assert_eq!(
            Target::parse("gep/infer").unwrap().resource.plural,
            "endpoints"
        );
        assert_eq!(
            Target::parse("gnv/data").unwrap().resource.api_version,
            "gpucloud.io/v1beta1"
        );
    }

    #[test]
    fn what_is_not_a_target_says_why() {
        let e = Target::parse("trainer").unwrap_err().to_string();
        assert!(e.contains("KIND/NAME"), "{e}");
        let e = Target::parse("deployment/web").unwrap_err().to_string();
        assert!(e.contains("gpod"), "the message lists the kinds: {e}");
        assert!(Target::parse("gpod/").is_err());
    }
}
