//! `migrate-storage`: moves every stored object of the operator's kinds to the CRDs' storage
//! version, then trims each CRD's `status.storedVersions` to that version alone, so that a
//! later release may stop serving the older version (docs/operations.md, "Versions and
//! upgrades").
//!
//! An object is stored in the version that was the storage version when it was last
//! written. Writing each back unchanged makes the apiserver store it again, in the storage
//! version of now: the bytes it would write differ from the stored ones, so the write is
//! not skipped as a no-op. Reading an object stored in `v1alpha1` goes through the
//! conversion webhook, so the operator must be running.

use anyhow::Context;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;

/// How many objects one list call reads.
const PAGE: u32 = 500;
/// How often a write that lost to another writer is tried again.
const ATTEMPTS: usize = 5;

#[derive(Debug, clap::Args)]
pub struct MigrateStorageArgs {}

/// What the migration did for one CRD.
#[derive(Debug, PartialEq, Eq)]
pub struct Migrated {
    pub crd: String,
    pub storage: String,
    /// Objects written back in the storage version.
    pub rewritten: usize,
    /// `status.storedVersions` before.
    pub stored_before: Vec<String>,
}

pub async fn run(_args: MigrateStorageArgs) -> anyhow::Result<()> {
    let kube = Client::try_default().await.context(
        "no Kubernetes cluster: set KUBECONFIG, or run inside a cluster with a service account",
    )?;
    let names: Vec<String> = super::webhook::crd_names();
    for migrated in migrate(&kube, &names).await? {
        println!(
            "{}: {} objects stored in {}; storedVersions {:?} -> [{:?}]",
            migrated.crd,
            migrated.rewritten,
            migrated.storage,
            migrated.stored_before,
            migrated.storage
        );
    }
    Ok(())
}

/// Pure: the `storedVersions` to write once every object is stored in `storage`, or `None`
/// when it says that already.
pub fn trimmed(stored: &[String], storage: &str) -> Option<Vec<String>> {
    (stored != [storage]).then(|| vec![storage.to_string()])
}

/// Migrates the CRDs `names`, each installed one in turn.
pub async fn migrate(kube: &Client, names: &[String]) -> anyhow::Result<Vec<Migrated>> {
    let crds: Api<CustomResourceDefinition> = Api::all(kube.clone());
    let mut done = Vec::new();
    for name in names {
        let Some(crd) = crds
            .get_opt(name)
            .await
            .with_context(|| format!("reading the CRD {name}"))?
        else {
            continue;
        };
        let storage = crd
            .spec
            .versions
            .iter()
            .find(|v| v.storage)
            .map(|v| v.name.clone())
            .with_context(|| format!("the CRD {name} has no storage version"))?;
        let stored_before = crd
            .status
            .as_ref()
            .and_then(|s| s.stored_versions.clone())
            .unwrap_or_default();
        let Some(keep) = trimmed(&stored_before, &storage) else {
            done.push(Migrated {
                crd: name.clone(),
                storage,
                rewritten: 0,
                stored_before,
            });
            continue;
        };
        let resource = ApiResource {
            group: crd.spec.group.clone(),
            version: storage.clone(),
            api_version: format!("{}/{storage}", crd.spec.group),
            kind: crd.spec.names.kind.clone(),
            plural: crd.spec.names.plural.clone(),
        };
        let rewritten = rewrite_all(kube, &resource)
            .await
            .with_context(|| format!("writing back the objects of {name}"))?;
        crds.patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"storedVersions": keep}})),
        )
        .await
        .with_context(|| format!("trimming the storedVersions of {name}"))?;
        done.push(Migrated {
            crd: name.clone(),
            storage,
            rewritten,
            stored_before,
        });
    }
    Ok(done)
}

/// Writes every object of `resource` back unchanged, page by page; returns how many.
async fn rewrite_all(kube: &Client, resource: &ApiResource) -> Result<usize, kube::Error> {
    let all: Api<DynamicObject> = Api::all_with(kube.clone(), resource);
    let mut params = ListParams::default().limit(PAGE);
    let mut count = 0;
    loop {
        let page = all.list(&params).await?;
        for object in page.items {
            let namespace = object.namespace().unwrap_or_default();
            let api: Api<DynamicObject> = Api::namespaced_with(kube.clone(), &namespace, resource);
            if rewrite(&api, object).await? {
                count += 1;
            }
        }
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => return Ok(count),
        }
    }
}

/// Writes `object` back as it is; one that changed meanwhile is read again and written, one
/// that is gone is left. Whether it was written.
async fn rewrite(api: &Api<DynamicObject>, object: DynamicObject) -> Result<bool, kube::Error> {
    let name = object.name_any();
    let mut object = object;
    for _ in 0..ATTEMPTS {
        match api.replace(&name, &PostParams::default(), &object).await {
            Ok(_) => return Ok(true),
            Err(kube::Error::Api(e)) if e.code == 404 => return Ok(false),
            Err(kube::Error::Api(e)) if e.code == 409 => match api.get_opt(&name).await? {
                Some(fresh) => object = fresh,
                None => return Ok(false),
            },
            Err(other) => return Err(other),
        }
    }
    // Written by someone else each time: stored in the storage version by those writes.
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_versions_are_trimmed_to_the_storage_version() {
        let v = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            trimmed(&v(&["v1alpha1", "v1beta1"]), "v1beta1"),
            Some(v(&["v1beta1"]))
        );
        assert_eq!(trimmed(&v(&["v1alpha1"]), "v1beta1"), Some(v(&["v1beta1"])));
        assert_eq!(trimmed(&v(&["v1beta1"]), "v1beta1"), None);
    }
}
