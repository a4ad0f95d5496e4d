//! How the plugin reaches the cluster and the platform: the current kube context (as
//! kubectl would), and an API key from the environment or from the operator's Secret in the
//! cluster, so that who may read that Secret decides who may use the plugin. The key is
//! never printed: errors name the Secret and the variable, not the value.

use std::time::Duration;

use anyhow::{Context, bail};

use gpucloud_engine::credentials::{CredentialResolver, DefaultKey};
use gpucloud_platform::PlatformClient;
use gpucloud_platform::config::{ApiKey, BaseUrls, PlatformApi, PlatformConfig};

/// Where the plugin finds the cluster and the platform.
#[derive(Debug, Clone, clap::Args)]
pub struct Access {
    /// The operator's API key Secret, NAMESPACE/NAME (key `apiKey`), read when
    /// GPUCLOUD_API_KEY is not set.
    #[arg(
        long,
        global = true,
        default_value = "gpucloud-system/gpucloud-api-key"
    )]
    pub api_key_secret: String,
    /// REST v2 base, including `/v2` [env: GPUCLOUD_API_URL].
    #[arg(long, global = true)]
    pub api_url: Option<String>,
    /// Which platform API to speak: v2 or seed [env: GPUCLOUD_PLATFORM_API; default v2].
    #[arg(long, global = true)]
    pub platform_api: Option<String>,
}

/// The cluster of the current kube context.
pub async fn kube_client() -> anyhow::Result<kube::Client> {
    kube::Client::try_default()
        .await
        .context("could not reach the cluster of the current kube context")
}

/// `-n` when given, else the current context's namespace, as kubectl chooses.
pub async fn namespace_or_context(namespace: Option<String>) -> String {
    match namespace {
        Some(ns) => ns,
        None => context_namespace().await,
    }
}

/// The namespace of the current kube context (kubectl's default for `-n`).
pub async fn context_namespace() -> String {
    match kube::Config::infer().await {
        Ok(config) => config.default_namespace,
        Err(_) => "default".into(),
    }
}

/// The platform client: URLs from the environment and `--api-url`, the key from
/// GPUCLOUD_API_KEY or else from `--api-key-secret` in the cluster.
pub async fn platform_client(
    access: &Access,
    kube: &kube::Client,
) -> anyhow::Result<PlatformClient> {
    let mut urls = BaseUrls::from_env()?;
    urls.override_api(access.api_url.as_deref())?;
    let key = match ApiKey::from_env() {
        Ok(key) => key,
        Err(_) => key_from_secret(kube, &access.api_key_secret).await?,
    };
    let mut config = PlatformConfig::new(urls, key);
    config.api = match &access.platform_api {
        Some(v) => v.parse()?,
        None => PlatformApi::from_env()?,
    };
    Ok(PlatformClient::new(config)?)
}

async fn key_from_secret(kube: &kube::Client, reference: &str) -> anyhow::Result<ApiKey> {
    let Some((namespace, name)) = reference.split_once('/') else {
        bail!("--api-key-secret must be NAMESPACE/NAME, got {reference:?}");
    };
    let default = DefaultKey::Secret {
        namespace: namespace.into(),
        name: name.into(),
        key: "apiKey".into(),
    };
    let resolver = CredentialResolver::new(kube.clone(), default, Duration::ZERO);
    match resolver.resolve(namespace, None).await {
        Ok(credentials) => Ok(credentials.key),
        Err(failure) => bail!(
            "no API key: GPUCLOUD_API_KEY is not set and {} ({})",
            failure.message,
            failure.reason
        ),
    }
}
