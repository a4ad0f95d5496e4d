//! The account's keyed collections (endpoints, network volumes, templates, registry
//! credentials) as the REST handlers of both surfaces read and delete them.
//!
//! v1 and v2 show the same records through different views and answer with different error
//! types, but list, look up and delete them the same way: a list is every record in id
//! order, a missing id is a 404 naming the record, and a record something still refers to
//! is a 400 saying what. [`Collection`] holds what differs between collections and
//! [`Refusal`] is what each surface turns into its own error (`error::ApiError`,
//! `v2::Problem`).

use std::sync::Arc;

use super::model::{EndpointRecord, NetworkVolume, RegistryAuth, Template};
use super::world::World;
use super::world::endpoints;

/// Records by id: every collection of the world is one.
pub type Records<R> = super::record_map::RecordMap<R>;

/// Why a collection handler refused: each surface answers it in its own error type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// 404: the collection holds no record with the id (`network volume nv-1 not found`).
    #[error("{0}")]
    NotFound(String),
    /// 400: something still uses the record; the text says what.
    #[error("{0}")]
    InUse(String),
}

/// One collection of the world: what its records are called in errors, where they are kept,
/// what may keep one from being deleted and what must let go of one that was.
pub struct Collection<R: 'static> {
    /// The record's name in a 404 (`network volume`); its plural names the collection.
    pub noun: &'static str,
    pub records: fn(&World) -> &Records<R>,
    pub records_mut: fn(&mut World) -> &mut Records<R>,
    /// Why the record cannot be deleted, if something still uses it.
    pub in_use: fn(&World, &str) -> Option<String>,
    /// Called with a record just deleted, for what referred to it and may let go.
    pub release: fn(&mut World, &R),
}

/// A record kept in one of the world's collections.
pub trait Keyed: Sized + Send + Sync + 'static {
    const COLLECTION: Collection<Self>;
}

impl Keyed for EndpointRecord {
    const COLLECTION: Collection<Self> = Collection {
        noun: "endpoint",
        records: |w| &w.endpoints,
        records_mut: |w| &mut w.endpoints,
        in_use: |_, _| None,
        release: endpoints::release_template_of,
    };
}

impl Keyed for NetworkVolume {
    const COLLECTION: Collection<Self> = Collection {
        noun: "network volume",
        records: |w| &w.volumes,
        records_mut: |w| &mut w.volumes,
        in_use: endpoints::volume_in_use,
        release: |_, _| {},
    };
}

impl Keyed for Template {
    const COLLECTION: Collection<Self> = Collection {
        noun: "template",
        records: |w| &w.templates,
        records_mut: |w| &mut w.templates,
        in_use: endpoints::template_in_use,
        release: |_, _| {},
    };
}

impl Keyed for RegistryAuth {
    const COLLECTION: Collection<Self> = Collection {
        noun: "container registry credential",
        records: |w| &w.registries,
        records_mut: |w| &mut w.registries,
        in_use: registry_in_use,
        release: forget_registry,
    };
}

/// Templates that named a deleted credential lose the reference.
fn forget_registry(world: &mut World, removed: &RegistryAuth) {
    let using: Vec<String> = world
        .templates
        .values()
        .filter(|t| t.registry.as_deref() == Some(removed.id.as_str()))
        .map(|t| t.id.clone())
        .collect();
    for id in using {
        if let Some(t) = world.templates.get_mut(&id) {
            t.registry = None;
        }
    }
}

pub const ENDPOINTS: Collection<EndpointRecord> = EndpointRecord::COLLECTION;
pub const VOLUMES: Collection<NetworkVolume> = NetworkVolume::COLLECTION;
pub const TEMPLATES: Collection<Template> = Template::COLLECTION;
pub const REGISTRIES: Collection<RegistryAuth> = RegistryAuth::COLLECTION;

impl<R> Collection<R> {
    /// The 404 for an id the collection does not hold.
    pub fn not_found(&self, id: &str) -> Refusal {
        Refusal::NotFound(format!("{} {id} not found", self.noun))
    }

    /// Every record, in id order.
    pub fn all<'w>(&self, world: &'w World) -> impl Iterator<Item = &'w R> {
        (self.records)(world).values()
    }

    /// The record `id`, or the 404.
    pub fn find<'w>(&self, world: &'w World, id: &str) -> Result<&'w R, Refusal> {
        (self.records)(world)
            .get(id)
            .ok_or_else(|| self.not_found(id))
    }

    /// Removes the record `id` unless it is missing (404) or still in use (400); either
    /// refusal leaves the world as it was.
    pub fn delete_unused(&self, world: &mut World, id: &str) -> Result<Arc<R>, Refusal> {
        self.find(world, id)?;
        if let Some(why) = (self.in_use)(world, id) {
            return Err(Refusal::InUse(why));
        }
        let removed = (self.records_mut)(world)
            .remove(id)
            .ok_or_else(|| self.not_found(id))?;
        (self.release)(world, &removed);
        Ok(removed)
    }
}

/// Why a credential cannot be deleted, if it cannot.
pub fn registry_in_use(world: &World, id: &str) -> Option<String> {
    if let Some(p) = world
        .cloud
        .pods()
        .find(|p| p.registry.as_deref() == Some(id))
    {
        return Some(format!("registry {id} is used by pod {}", p.id));
    }
    world
        .endpoints
        .values()
        .find(|e| e.container.registry.as_deref() == Some(id))
        .map(|e| format!("registry {id} is used by endpoint {}", e.id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ApiError;
    use crate::fixtures::Fixtures;
    use crate::v2::Problem;

    fn world() -> World {
        World::from_fixtures(&Fixtures::built_in()).unwrap()
    }

    #[test]
    fn a_missing_record_is_a_404_naming_it_on_both_surfaces() {
        let mut w = world();
        let v1 = ApiError::from(VOLUMES.find(&w, "nv-missing").unwrap_err());
        assert_eq!(v1.status.as_u16(), 404);
        assert_eq!(v1.detail, "network volume nv-missing not found");
        let v2 = Problem::from(REGISTRIES.delete_unused(&mut w, "r-missing").unwrap_err());
        assert_eq!(v2.status.as_u16(), 404);
        assert_eq!(
            v2.detail,
            "container registry credential r-missing not found"
        );
    }

    #[test]
    fn a_record_in_use_stays_and_an_unused_one_goes() {
        let mut w = world();
        let used = w
            .endpoints
            .values()
            .map(|e| e.template_id.clone())
            .next()
            .expect("the fixtures have an endpoint");
        let refused = TEMPLATES.delete_unused(&mut w, &used).unwrap_err();
        assert!(matches!(refused, Refusal::InUse(_)), "{refused:?}");
        assert_eq!(Problem::from(refused.clone()).status.as_u16(), 400);
        assert_eq!(ApiError::from(refused).status.as_u16(), 400);
        assert!(w.templates.contains_key(&used));

        let unused = w
            .templates
            .keys()
            .find(|id| endpoints::template_in_use(&w, id).is_none())
            .cloned()
            .expect("the fixtures have an unused template");
        let removed = TEMPLATES.delete_unused(&mut w, &unused).unwrap();
        assert_eq!(removed.id, unused);
        assert!(!w.templates.contains_key(&unused));
    }

    #[test]
    fn all_lists_every_record_in_id_order() {
        let w = world();
        let ids: Vec<&str> = VOLUMES.all(&w).map(|v| v.id.as_str()).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(ids, sorted);
        assert_eq!(ids.len(), w.volumes.len());
    }
}
