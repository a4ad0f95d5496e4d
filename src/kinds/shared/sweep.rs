//! What `orphans` reads of a kind, from the kind's own inventory and actuator: its remote
//! objects as the orphan sweep judges them (`Inventory::list`, `Inventory::orphan_candidate`),
//! its objects in the cluster, and how one of its remote objects is removed
//! (`Actuator::delete`). A kind that the sweep covers says so in its registration
//! (`RegisteredKind::sweep` in `src/kinds/mod.rs`), and implements [`Swept`] in its folder; nothing else names it.

use futures::FutureExt;
use futures::future::BoxFuture;
use kube::Api;
use kube::api::ListParams;

use gpucloud_crd::ManagedKind;
use gpucloud_engine::adapter::Adapter;
use gpucloud_engine::failure::Failure;
use gpucloud_platform::PlatformClient;
use gpucloud_policy::orphans::{Candidate, ClusterObjects};

/// A kind whose orphans `orphans` lists and removes.
pub trait Swept: Adapter {
    /// When `--delete` removes this kind's orphans among the others: what uses another
    /// goes first (pods and clusters, then endpoints, templates, and volumes last, since
    /// the platform refuses to delete what something still uses).
    const DELETE_ORDER: u8;

    /// What removing one of its remote objects is called, for what `orphans` prints.
    const REMOVAL: &'static str = "deleted";

    /// The adapter as the sweep uses it: to list and to delete, nothing else (no Budget,
    /// no guardrail; the sweep makes one listing).
    fn for_sweep(kube: &kube::Client) -> Self;
}

/// Lists a kind's remote objects as candidates.
pub type ListCandidates =
    fn(kube::Client, PlatformClient) -> BoxFuture<'static, Result<Vec<Candidate>, Failure>>;
/// Lists a kind's objects in the cluster.
pub type ListObjects = fn(kube::Client) -> BoxFuture<'static, kube::Result<ClusterObjects>>;
/// Removes one of a kind's remote objects by id.
pub type RemoveRemote =
    fn(kube::Client, PlatformClient, String) -> BoxFuture<'static, Result<(), Failure>>;

/// How `orphans` reaches one kind.
#[derive(Clone, Copy)]
pub struct OrphanSweep {
    /// The kind's name, as candidates and the released record spell it.
    pub kind: &'static str,
    /// What users call its remote object ("network volume").
    pub noun: &'static str,
    /// See [`Swept::DELETE_ORDER`].
    pub delete_order: u8,
    /// See [`Swept::REMOVAL`].
    pub removal: &'static str,
    /// The account's remote objects of the kind, as candidates.
    pub candidates: ListCandidates,
    /// The kind's objects in the cluster; none when its CRD is not installed (after an
    /// uninstall that took the CRDs along, remote objects are judged by the released
    /// record and their tags alone).
    pub objects: ListObjects,
    /// Removes one remote object by id.
    pub delete: RemoveRemote,
}

impl OrphanSweep {
    pub const fn of<A: Swept>() -> Self {
        Self {
            kind: A::KIND,
            noun: A::NOUN,
            delete_order: A::DELETE_ORDER,
            removal: A::REMOVAL,
            candidates: candidates_of::<A>,
            objects: objects_of::<A::Kind>,
            delete: delete_of::<A>,
        }
    }
}

fn candidates_of<A: Swept>(
    kube: kube::Client,
    platform: PlatformClient,
) -> BoxFuture<'static, Result<Vec<Candidate>, Failure>> {
    async move {
        let listed = A::for_sweep(&kube).list(&platform).await?;
        Ok(listed.iter().filter_map(A::orphan_candidate).collect())
    }
    .boxed()
}

fn objects_of<K: ManagedKind>(
    kube: kube::Client,
) -> BoxFuture<'static, kube::Result<ClusterObjects>> {
    async move {
        let api: Api<K> = Api::all(kube);
        match api.list(&ListParams::default()).await {
            Ok(list) => Ok(ClusterObjects::of(list.items.iter())),
            Err(kube::Error::Api(status)) if status.code == 404 => {
                Ok(ClusterObjects::of(std::iter::empty::<&K>()))
            }
            Err(err) => Err(err),
        }
    }
    .boxed()
}

fn delete_of<A: Swept>(
    kube: kube::Client,
    platform: PlatformClient,
    id: String,
) -> BoxFuture<'static, Result<(), Failure>> {
    async move { A::for_sweep(&kube).delete(&platform, &id, None).await }.boxed()
}
