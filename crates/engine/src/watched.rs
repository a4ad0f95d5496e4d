//! What one install watches: which namespaces, and which objects in them (a label
//! selector). The watch of each kind and the Budgets' watches read it.

use super::namespace_watch::{NamespaceNames, SelectedNamespaces};

/// Which namespaces the operator watches.
#[derive(Clone, Debug, Default)]
pub enum Namespaces {
    #[default]
    All,
    Only(Vec<String>),
    /// The namespaces whose labels match a selector, as they come and go
    /// (`--namespace-selector`).
    Selected(SelectedNamespaces),
}

impl Namespaces {
    /// The namespaces watched right now, one by one; `None`: every namespace.
    pub fn now(&self) -> Option<NamespaceNames> {
        match self {
            Namespaces::All => None,
            Namespaces::Only(list) => Some(std::sync::Arc::new(list.iter().cloned().collect())),
            Namespaces::Selected(selected) => Some(selected.now()),
        }
    }
}

/// What one install watches: namespaces, and optionally only objects with some labels.
#[derive(Clone, Debug, Default)]
pub struct Watched {
    pub namespaces: Namespaces,
    /// A label selector on the objects of every kind (not on Secrets).
    pub selector: Option<String>,
}
