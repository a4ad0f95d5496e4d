//! The one seam between the controllers and the platform: a domain-level interface per
//! kind of remote object, with two implementations behind it.
//!
//! - `seed`: REST v1 and GraphQL, exactly as the seed spec describes them.
//! - `v2`: REST v2, as the platform's published document describes it (the default).
//!
//! The choice is made per account ([`super::PlatformApi`] in the client's configuration);
//! callers get the same domain types from both and never learn which backend answered.
//! Each facade is obtained from the client (`client.volumes()`, ...) and is as cheap to
//! make as the client is to clone.

pub mod catalog;
pub mod endpoints;
pub mod pods;
pub mod volumes;

pub use catalog::{Catalog, PoolMap};
pub use endpoints::{
    EndpointChange, EndpointSpec, Endpoints, GpuSelection, Rollout, Scaler, ServerlessEndpoint,
};
pub use pods::{
    EXITED, GpuOffer, Placement, Pod, PodRequest, Pods, RUNNING, TERMINATED,
};
pub use volumes::{NewVolume, Volume, VolumeType, VolumeUpdate, Volumes};
