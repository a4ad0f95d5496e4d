//! What the account holds of one kind: the listing, and which remote object is an
//! object's own.

use std::fmt::Debug;
use std::future::Future;

use gpucloud_crd::ManagedKind;
use gpucloud_platform::PlatformClient;
use gpucloud_platform::domain::Identified;

use crate::failure::Failure;
use crate::marker::{Candidate, Marker};

/// The remote objects of one kind in an account, and how an object recognises its own
/// among them. A remote object is named by its id ([`Identified`]), which the engine keeps
/// in status and looks the object up by.
pub trait Inventory: Send + Sync + Sized + 'static {
    type Kind: ManagedKind;
    type Remote: Identified + Clone + Debug + Send + Sync + 'static;

    /// Kind name, as in metrics and logs.
    const KIND: &'static str;
    /// What users call the remote object, for messages ("network volume").
    const NOUN: &'static str;

    /// Every remote object of this kind in the account: one call, for the shared snapshot.
    fn list(
        &self,
        client: &PlatformClient,
    ) -> impl Future<Output = Result<Vec<Self::Remote>, Failure>> + Send;

    /// Pure: whether `remote` is the one this object created (by its deterministic name or
    /// tag): how a create interrupted before its id reached status is found again.
    fn claims(&self, obj: &Self::Kind, remote: &Self::Remote) -> bool;

    /// Pure: `remote` as the orphan sweep sees it (its marker, what it costs); `None` when
    /// it is gone already (a terminated pod).
    fn orphan_candidate(_remote: &Self::Remote) -> Option<Candidate> {
        None
    }

    /// Pure: the marker `remote` carries, which names the object that made it (see
    /// [`crate::marker`]); `None` when it carries none (a name the spec chose, a remote
    /// object made outside the operator). The engine refuses to adopt, change or delete a
    /// remote object another live object's marker names ([`crate::tenancy`]). By default,
    /// the marker the orphan sweep reads.
    fn owner_marker(remote: &Self::Remote) -> Option<Marker> {
        Self::orphan_candidate(remote).and_then(|c| c.marker)
    }
}
