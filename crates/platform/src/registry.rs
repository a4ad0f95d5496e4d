//! The registry delegation API: `{registry}/v2/registries/delegations`. Bearer auth.

use reqwest::Method;

use super::error::PlatformError;
use super::operation::Operation;
use super::transport::{Auth, Call, Transport};
use super::types::{Delegation, DelegationList};

/// Registry calls. Cheap to clone; obtained from [`super::PlatformClient::registry`].
#[derive(Clone, Debug)]
pub struct Registry {
    t: Transport,
}

impl Registry {
    pub(crate) fn new(t: Transport) -> Self {
        Self { t }
    }

    /// `GET /v2/registries/delegations`.
    pub async fn list_delegations(&self) -> Result<Vec<Delegation>, PlatformError> {
        let mut url = self.t.urls().registry.clone();
        url.path_segments_mut()
            .expect("http(s) base URL")
            .pop_if_empty()
            .extend(["v2", "registries", "delegations"]);
        let call = Call::new(
            Operation::RegistryListDelegations,
            Method::GET,
            url,
            Auth::Bearer,
        );
        let list: DelegationList = self.t.send_json(&call).await?;
        Ok(list.delegations)
    }
}
