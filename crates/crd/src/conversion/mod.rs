//! Conversion between `v1alpha1` and `v1beta1` (docs/api-versions.md), both ways and without
//! loss: `v1alpha1` -> `v1beta1` -> `v1alpha1` gives back the same object, and so does the
//! reverse. A value one version cannot hold is kept in the annotation
//! `gpucloud.io/conversion` of the other ([`shared::Kept`]).
//!
//! Pure functions: one module per kind on the typed objects (metadata and status included),
//! and [`convert`] on a whole object as JSON, which a `ConversionReview` webhook calls.

pub mod cluster;
pub mod endpoint;
mod error;
pub mod pod;
pub mod same_spec;
pub mod shared;
pub mod template;
mod value;

pub use error::ConversionError;
pub use shared::ANNOTATION;
pub use value::convert;

#[cfg(test)]
mod tests;
