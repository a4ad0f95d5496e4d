//! Every custom resource kind of the operator, registered once.
//!
//! [`KINDS`] is what everything that enumerates kinds reads: the CRDs that `crds` prints
//! and `run` checks for, the controllers `run` starts, the demo's table, and the tests that
//! hold the RBAC and Argo CD manifests under `deploy/` to the list ([`rbac`] says what each
//! kind needs there). CONTRIBUTING.md walks through adding a kind.

pub mod budget;
pub mod cluster;
pub mod endpoint;
pub mod network_volume;
pub mod pod;
pub mod rbac;
pub mod registry_credential;
pub mod shared;
pub mod summary;
pub mod template;

use futures::StreamExt;
use futures::future::BoxFuture;
use gpucloud_policy::budget::ledger::MemberKind;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionNames,
};
use kube::CustomResourceExt;
use kube::runtime::reflector::ObjectRef;
use tokio::task::JoinHandle;

use crate::app::controllers::Controllers;
use budget::BudgetController;
use cluster::ClusterAdapter;
use endpoint::EndpointAdapter;
use gpucloud_crd::{Budget, Cluster, Endpoint, NetworkVolume, Pod, RegistryCredential, Template};
use network_volume::NetworkVolumeAdapter;
use pod::PodAdapter;
use registry_credential::RegistryCredentialAdapter;
use shared::sweep::OrphanSweep;
use summary::{Row, rows_of};
use template::TemplateAdapter;

/// Starts a kind's controller as a task.
pub type StartController = fn(&Controllers) -> JoinHandle<()>;
/// Lists a kind's table rows (the demo's, `kubectl gpucloud status`) in a namespace, or in
/// every namespace when `None`.
pub type ListRows = fn(kube::Client, Option<String>) -> BoxFuture<'static, kube::Result<Vec<Row>>>;

/// One kind of the operator. Its names (kind, plural, short names, group) are read from
/// its CRD, so the `#[kube(...)]` attribute of the type stays their only source.
#[derive(Clone, Copy)]
pub struct RegisteredKind {
    /// The CustomResourceDefinition, as `CustomResourceExt::crd` generates it.
    pub crd: fn() -> CustomResourceDefinition,
    /// How `run` starts the kind's controller (the engine, for a kind that mirrors a
    /// platform object); `None` for a kind the operator only reads (its RBAC then has no
    /// writes, see [`rbac::needs`], and Argo CD no health check: nothing writes its status).
    pub controller: Option<StartController>,
    pub rows: ListRows,
    /// How `orphans` lists and removes the kind's remote objects; `None` for a kind the
    /// sweep does not cover.
    pub sweep: Option<OrphanSweep>,
}

/// Every kind, in the order of the CRD stream (`crds`, `crds/gpucloud.io.yaml`).
pub const KINDS: &[RegisteredKind] = &[
    RegisteredKind {
        crd: gpucloud_crd::managed_crd::<NetworkVolume>,
        controller: Some(start_network_volumes),
        rows: rows_of::<NetworkVolume>,
        sweep: Some(OrphanSweep::of::<NetworkVolumeAdapter>()),
    },
    RegisteredKind {
        crd: gpucloud_crd::managed_crd::<Endpoint>,
        controller: Some(start_endpoints),
        rows: rows_of::<Endpoint>,
        sweep: Some(OrphanSweep::of::<EndpointAdapter>()),
    },
    RegisteredKind {
        crd: gpucloud_crd::managed_crd::<Pod>,
        controller: Some(start_pods),
        rows: rows_of::<Pod>,
        sweep: Some(OrphanSweep::of::<PodAdapter>()),
    },
    RegisteredKind {
        crd: Budget::crd,
        controller: Some(start_budgets),
        rows: rows_of::<Budget>,
        sweep: None,
    },
    // --- Template and RegistryCredential ---
    RegisteredKind {
        crd: gpucloud_crd::managed_crd::<RegistryCredential>,
        controller: Some(start_registry_credentials),
        rows: rows_of::<RegistryCredential>,
        sweep: None,
    },
    RegisteredKind {
        crd: gpucloud_crd::managed_crd::<Template>,
        controller: Some(start_templates),
        rows: rows_of::<Template>,
        sweep: Some(OrphanSweep::of::<TemplateAdapter>()),
    },
    RegisteredKind {
        crd: gpucloud_crd::managed_crd::<Cluster>,
        controller: Some(start_clusters),
        rows: rows_of::<Cluster>,
        sweep: Some(OrphanSweep::of::<ClusterAdapter>()),
    },
];

// One function per kind builds its adapter: the only place to touch when an adapter's
// constructor changes.

fn start_network_volumes(controllers: &Controllers) -> JoinHandle<()> {
    controllers.spawn(NetworkVolumeAdapter)
}

fn start_endpoints(controllers: &Controllers) -> JoinHandle<()> {
    let adapter = EndpointAdapter::default().with_budgets(
        controllers.budgets.clone(),
        controllers.shared.config.poll_interval,
    );
    // Held endpoints are reconciled again when the Budgets' ledger finds room for them.
    controllers.spawn_with_wakes(adapter, budget_wakes(controllers, MemberKind::Endpoint))
}

fn start_pods(controllers: &Controllers) -> JoinHandle<()> {
    let shared = &controllers.shared;
    let adapter = PodAdapter::new(shared.config.poll_interval)
        .with_guardrails(shared.config.clock.clone(), shared.metrics.clone())
        .with_budgets(controllers.budgets.clone());
    // Held pods are reconciled again when the Budgets' ledger finds room for them.
    controllers.spawn_with_wakes(adapter, budget_wakes(controllers, MemberKind::Pod))
}

fn start_clusters(controllers: &Controllers) -> JoinHandle<()> {
    let shared = &controllers.shared;
    let adapter = ClusterAdapter::new(shared.config.poll_interval, shared.config.clock.clone())
        .with_budgets(controllers.budgets.clone());
    // Held clusters are reconciled again when the Budgets' ledger finds room for them.
    controllers.spawn_with_wakes(adapter, budget_wakes(controllers, MemberKind::Cluster))
}

/// The objects of `kind` the Budgets' ledger found room for, to reconcile again, as a
/// stream; dropped with the controller, which hands them back to the ledger for the kind's
/// next controller (the next term of leadership).
fn budget_wakes<K>(
    controllers: &Controllers,
    kind: MemberKind,
) -> futures::stream::BoxStream<'static, ObjectRef<K>>
where
    K: kube::Resource<DynamicType = ()> + 'static,
{
    let Some(mut wakes) = controllers.budgets.take_wakes(kind) else {
        return futures::stream::empty().boxed();
    };
    futures::stream::poll_fn(move |cx| wakes.poll_recv(cx))
        .map(|woken| ObjectRef::new(&woken.name).within(&woken.namespace))
        .boxed()
}

/// The Budget kind has no engine (it is no platform object): its reconciler runs on the
/// same runtime and feeds the ledger the Pod, Endpoint and Cluster adapters admit against.
fn start_budgets(controllers: &Controllers) -> JoinHandle<()> {
    let budgets = BudgetController::new(
        controllers.shared.clone(),
        controllers.budgets.clone(),
        controllers.watched.clone(),
        controllers.billing_interval,
    );
    controllers.spawn_reconciler(budgets.reconciler, budgets.wakes, Some(budgets.companion))
}

fn start_registry_credentials(controllers: &Controllers) -> JoinHandle<()> {
    controllers.spawn(RegistryCredentialAdapter)
}

fn start_templates(controllers: &Controllers) -> JoinHandle<()> {
    controllers.spawn(TemplateAdapter::new(controllers.shared.kube.clone()))
}

impl RegisteredKind {
    /// Whether a controller of the operator writes to the kind's objects and their status.
    pub fn is_managed(&self) -> bool {
        self.controller.is_some()
    }

    /// The names block of the CRD: `kind`, `plural`, `shortNames`, `categories`.
    pub fn names(&self) -> CustomResourceDefinitionNames {
        (self.crd)().spec.names
    }

    /// `NetworkVolume`.
    pub fn kind(&self) -> String {
        self.names().kind
    }

    /// `networkvolumes`: the resource in RBAC rules and the CRD's name.
    pub fn plural(&self) -> String {
        self.names().plural
    }

    pub fn short_names(&self) -> Vec<String> {
        self.names().short_names.unwrap_or_default()
    }

    /// `gpucloud.io`.
    pub fn group(&self) -> String {
        (self.crd)().spec.group
    }
}

/// Every CRD, in the order of [`KINDS`].
pub fn crds() -> Vec<CustomResourceDefinition> {
    KINDS
        .iter()
        .map(|kind| gpucloud_crd::with_unobserved_status((kind.crd)()))
        .collect()
}

/// The field reference of every CRD, as committed in `docs/reference.md`.
pub fn reference_markdown() -> String {
    gpucloud_crd::reference::markdown(&crds())
}

/// The CRDs as one multi-document YAML stream, as committed under `crds/`.
pub fn crds_yaml() -> Result<String, serde_saphyr::SerializeError> {
    let mut out = String::from("# Generated by `gpucloud-operator crds`; do not edit.\n");
    for crd in crds() {
        out.push_str("---\n");
        out.push_str(&serde_saphyr::to_string(&crd)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use gpucloud_crd::GROUP;

    #[test]
    fn kinds_plurals_and_short_names_are_unique() {
        let mut seen = BTreeSet::new();
        for kind in KINDS {
            let names = [kind.kind(), kind.plural()]
                .into_iter()
                .chain(kind.short_names());
            for name in names {
                let name = name.to_lowercase();
                assert!(seen.insert(name.clone()), "{name} names two kinds");
            }
        }
    }

    #[test]
    fn every_kind_is_in_the_group_and_the_gpucloud_category() {
        // `kubectl get gpucloud` (README, the demo's hint) lists the category.
        for kind in KINDS {
            let names = kind.names();
            assert_eq!(kind.group(), GROUP, "{}", names.kind);
            assert!(
                names
                    .categories
                    .unwrap_or_default()
                    .contains(&"gpucloud".into()),
                "{} is not in the gpucloud category",
                names.kind
            );
            assert!(
                !kind.short_names().is_empty(),
                "{} has no short name",
                names.kind
            );
        }
    }
}
