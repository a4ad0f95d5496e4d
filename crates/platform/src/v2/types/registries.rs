//! Container registry credentials. The username and password are write-only: sent on
//! create, never answered, never printed.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A stored registry credential (its name only).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Registry {
    pub id: String,
    pub name: String,
}

/// Body of `POST /v2/registries`. `Debug` masks the username and password.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateRegistry {
    pub name: String,
    pub username: String,
    pub password: String,
}

impl fmt::Debug for CreateRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CreateRegistry")
            .field("name", &self.name)
            .field("username", &"***")
            .field("password", &"***")
            .finish()
    }
}
