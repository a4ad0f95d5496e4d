//! What several kinds resolve the same way: how the Budgets hold them ([`budget_hold`]);
//! references to the operator's other objects
//! ([`dependency`]: wait until the object is Ready, then use its id) and environment
//! variables whose values come from Secrets ([`secret_env`]); the ConfigMaps kinds keep
//! beside their objects ([`owned_config_map`]); what `orphans` reads of a kind ([`sweep`]); how a kind is registered and started
//! ([`registration`]); and the unit tests' objects (`fixtures`). A kind reaches another kind's objects only through these, by their CRD
//! types, never through that kind's adapter.

pub mod budget_hold;
pub mod dependency;
#[cfg(test)]
pub mod fixtures;
pub mod owned_config_map;
pub mod registration;
pub mod secret_env;
pub mod sweep;
