//! Container registry credentials, whichever backend serves them. The username and
//! password are write-only: sent on create, never answered, never shown by `Debug`.

use super::super::config::PlatformApi;
use super::super::error::PlatformError;
use super::super::{ContainerRegistryAuth, ContainerRegistryAuthCreate, PlatformClient, v2};

type Result<T> = std::result::Result<T, PlatformError>;

/// A stored credential: the platform tells its name only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegistryCredential {
    pub id: String,
    pub name: String,
}

impl From<ContainerRegistryAuth> for RegistryCredential {
    fn from(r: ContainerRegistryAuth) -> Self {
        Self {
            id: r.id,
            name: r.name,
        }
    }
}

impl From<v2::Registry> for RegistryCredential {
    fn from(r: v2::Registry) -> Self {
        Self {
            id: r.id,
            name: r.name,
        }
    }
}

/// What a create sends. `Debug` masks the username and password.
#[derive(Clone, PartialEq, Eq)]
pub struct NewRegistryCredential {
    pub name: String,
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for NewRegistryCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewRegistryCredential")
            .field("name", &self.name)
            .field("username", &"***")
            .field("password", &"***")
            .finish()
    }
}

/// Registry credential calls; obtained from [`PlatformClient::registries`].
#[derive(Clone, Debug)]
pub struct RegistryCredentials {
    client: PlatformClient,
}

impl PlatformClient {
    /// Container registry credentials, on whichever backend the configuration chose.
    pub fn registries(&self) -> RegistryCredentials {
        RegistryCredentials::new(self.clone())
    }
}

impl RegistryCredentials {
    pub(crate) fn new(client: PlatformClient) -> Self {
        Self { client }
    }

    /// Every credential of the account, in one call.
    pub async fn list(&self) -> Result<Vec<RegistryCredential>> {
        super::list_from(
            self.client.api(),
            self.client.rest().list_container_registry_auths(),
            RegistryCredential::from,
            self.client
                .v2()
                .list_registries_as(RegistryCredential::from),
        )
        .await
    }

    /// Creates a credential. Never retried after an ambiguous failure: see
    /// [`PlatformError::may_have_been_applied`].
    pub async fn create(&self, new: &NewRegistryCredential) -> Result<RegistryCredential> {
        match self.client.api() {
            PlatformApi::Seed => {
                let input = ContainerRegistryAuthCreate {
                    name: new.name.clone(),
                    username: new.username.clone(),
                    password: new.password.clone(),
                };
                let r = self
                    .client
                    .rest()
                    .create_container_registry_auth(&input)
                    .await?;
                Ok(r.into())
            }
            PlatformApi::V2 => {
                let input = v2::CreateRegistry {
                    name: new.name.clone(),
                    username: new.username.clone(),
                    password: new.password.clone(),
                };
                Ok(self.client.v2().create_registry(&input).await?.into())
            }
        }
    }

    /// Deletes a credential; refused while a pod or an endpoint pulls with it.
    pub async fn delete(&self, id: &str) -> Result<()> {
        match self.client.api() {
            PlatformApi::Seed => self.client.rest().delete_container_registry_auth(id).await,
            PlatformApi::V2 => self.client.v2().delete_registry(id).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_masks_the_credentials() {
        let new = NewRegistryCredential {
            name: "hub".into(),
            username: "robot-user".into(),
            password: "hunter2-secret".into(),
        };
        let text = format!("{new:?}");
        assert!(
            !text.contains("robot-user") && !text.contains("hunter2-secret"),
            "{text}"
        );
    }
}
