//! What one install watches: which namespaces, and which objects in them (a label
//! selector). Every watch of the engine (a kind's, the Secrets') and the Budgets' read it.

use kube::{Api, Client};

/// Which namespaces the operator watches.
#[derive(Clone, Debug, Default)]
pub enum Namespaces {
    #[default]
    All,
    Only(Vec<String>),
}

/// What one install watches: namespaces, and optionally only objects with some labels.
#[derive(Clone, Debug, Default)]
pub struct Watched {
    pub namespaces: Namespaces,
    /// A label selector on the objects of every kind (not on Secrets).
    pub selector: Option<String>,
}

impl Namespaces {
    pub fn apis<K>(&self, client: &Client) -> Vec<Api<K>>
    where
        K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>,
    {
        match self {
            Namespaces::All => vec![Api::all(client.clone())],
            Namespaces::Only(list) => list
                .iter()
                .map(|ns| Api::namespaced(client.clone(), ns))
                .collect(),
        }
    }
}
