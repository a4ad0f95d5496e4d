//! The generic managed-resource engine and one adapter per kind.

pub mod cli;
pub mod conditions;
