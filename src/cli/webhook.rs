//! The conversion webhook's flags, shared by `run` (every replica serves it) and the
//! `conversion-webhook` command (the webhook alone: an install that runs it apart from the
//! controllers, and the tests' control plane).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use tracing::info;

use crate::app::stop::stopped;
use crate::app::telemetry::{self, LogFormat};

use super::flags::duration_arg;
use crate::app::conversion::{Address, Certificate, Started, Webhook};

/// The port a Service of the webhook listens on unless NAMESPACE/NAME:PORT says otherwise.
const SERVICE_PORT: i32 = 443;

#[derive(Clone, Debug, Default, clap::Args)]
pub struct WebhookArgs {
    /// Serve the CRDs' conversion webhook (`/convert`, HTTPS) on this address, such as
    /// `0.0.0.0:9443`; not served when unset. With it, exactly one of
    /// --conversion-webhook-cert-dir, --conversion-webhook-service and
    /// --conversion-webhook-url.
    #[arg(long, env = "GPUCLOUD_CONVERSION_WEBHOOK_ADDR")]
    pub conversion_webhook_addr: Option<SocketAddr>,
    /// Directory holding the webhook's certificate as tls.crt and tls.key (a cert-manager
    /// Certificate's Secret, mounted), read at start. With --conversion-webhook-service
    /// and --conversion-webhook-ca-from, the operator points the CRDs at the Service and
    /// has cert-manager inject that Certificate's CA; alone, the CRDs are left as installed.
    #[arg(long, env = "GPUCLOUD_CONVERSION_WEBHOOK_CERT_DIR")]
    pub conversion_webhook_cert_dir: Option<PathBuf>,
    /// The cert-manager Certificate, NAMESPACE/NAME, whose CA cert-manager's cainjector
    /// writes into the CRDs' caBundle (with --conversion-webhook-cert-dir).
    #[arg(long, env = "GPUCLOUD_CONVERSION_WEBHOOK_CA_FROM")]
    pub conversion_webhook_ca_from: Option<String>,
    /// The webhook's Service, NAME or NAME:PORT in the operator's namespace, or
    /// NAMESPACE/NAME or NAMESPACE/NAME:PORT (port 443 when unset):
    /// the operator makes its own CA and certificate for the Service's names, keeps them in
    /// the Secret --conversion-webhook-secret, and points the CRDs' spec.conversion at the
    /// Service with that CA.
    #[arg(long, env = "GPUCLOUD_CONVERSION_WEBHOOK_SERVICE")]
    pub conversion_webhook_service: Option<String>,
    /// The webhook's URL, https://HOST:PORT/convert, for a webhook outside the cluster: as
    /// with --conversion-webhook-service, with the certificate made for HOST.
    #[arg(long, env = "GPUCLOUD_CONVERSION_WEBHOOK_URL")]
    pub conversion_webhook_url: Option<String>,
    /// The Secret, in the operator's namespace, that keeps the certificate the operator
    /// makes for the webhook.
    #[arg(long, default_value = "gpucloud-operator-webhook-tls")]
    pub conversion_webhook_secret: String,
    /// How often the CRDs' spec.conversion is checked, and pointed at the webhook again
    /// when a CRD was applied without it.
    #[arg(long, default_value = "60s", value_parser = duration_arg)]
    pub conversion_webhook_check_interval: Duration,
    /// After SIGTERM, how long the webhook is still served: the process is no longer Ready
    /// (and the controllers have stopped), so the Service stops sending to it; conversions
    /// already on their way still find it listening. Keep it below the pod's
    /// terminationGracePeriodSeconds.
    #[arg(long, default_value = "5s", value_parser = duration_arg)]
    pub conversion_webhook_drain: Duration,
}

impl WebhookArgs {
    /// The webhook these flags describe, for CRDs `crds` in `namespace`; `None` when it is
    /// not served.
    pub fn webhook(&self, namespace: &str, crds: Vec<String>) -> anyhow::Result<Option<Webhook>> {
        let Some(listen) = self.conversion_webhook_addr else {
            if self.conversion_webhook_cert_dir.is_some()
                || self.conversion_webhook_service.is_some()
                || self.conversion_webhook_url.is_some()
                || self.conversion_webhook_ca_from.is_some()
            {
                bail!("--conversion-webhook-addr is needed to serve the conversion webhook");
            }
            return Ok(None);
        };
        let own = |address| Certificate::Own {
            namespace: namespace.to_string(),
            secret: self.conversion_webhook_secret.clone(),
            address,
        };
        let service = self
            .conversion_webhook_service
            .as_deref()
            .map(|s| service_address(s, namespace))
            .transpose()?;
        let certificate = match (
            &self.conversion_webhook_cert_dir,
            service,
            &self.conversion_webhook_url,
            &self.conversion_webhook_ca_from,
        ) {
            (Some(dir), None, None, None) => Certificate::Files {
                dir: dir.clone(),
                pointed: None,
            },
            (Some(dir), Some(address), None, Some(from)) => {
                if from
                    .split_once('/')
                    .is_none_or(|(ns, name)| ns.is_empty() || name.is_empty())
                {
                    bail!(
                        "--conversion-webhook-ca-from must be NAMESPACE/NAME of a cert-manager Certificate, got {from:?}"
                    );
                }
                Certificate::Files {
                    dir: dir.clone(),
                    pointed: Some((address, from.clone())),
                }
            }
            (Some(_), Some(_), None, None) => bail!(
                "--conversion-webhook-cert-dir with --conversion-webhook-service needs \
                 --conversion-webhook-ca-from: the cert-manager Certificate whose CA the CRDs trust"
            ),
            (None, Some(address), None, None) => own(address),
            (None, None, Some(url), None) => {
                if !url.starts_with("https://") {
                    bail!(
                        "--conversion-webhook-url must be https://HOST:PORT/convert, got {url:?}"
                    );
                }
                own(Address::Url(url.clone()))
            }
            (None, _, _, Some(_)) => {
                bail!("--conversion-webhook-ca-from goes with --conversion-webhook-cert-dir")
            }
            _ => bail!(
                "--conversion-webhook-addr needs exactly one of --conversion-webhook-cert-dir, \
                 --conversion-webhook-service and --conversion-webhook-url"
            ),
        };
        Ok(Some(Webhook {
            listen,
            certificate,
            crds,
            check_every: self.conversion_webhook_check_interval,
            drain: self.conversion_webhook_drain,
        }))
    }
}

/// Pure: `NAME[:PORT]` (in `own_namespace`) or `NAMESPACE/NAME[:PORT]`.
fn service_address(text: &str, own_namespace: &str) -> anyhow::Result<Address> {
    let (namespace, rest) = text.split_once('/').unwrap_or((own_namespace, text));
    let (name, port) = match rest.split_once(':') {
        Some((name, port)) => match port.parse::<i32>() {
            Ok(port) if (1..=65535).contains(&port) => (name, port),
            _ => bail!("--conversion-webhook-service: the port of {text:?} is not 1 to 65535"),
        },
        None => (rest, SERVICE_PORT),
    };
    if namespace.is_empty() || name.is_empty() {
        bail!(
            "--conversion-webhook-service must be NAME[:PORT] or NAMESPACE/NAME[:PORT], got {text:?}"
        );
    }
    Ok(Address::Service {
        namespace: namespace.into(),
        name: name.into(),
        port,
    })
}

/// `conversion-webhook`: the webhook alone, until SIGTERM or Ctrl-C.
#[derive(Debug, clap::Args)]
pub struct ConversionWebhookArgs {
    #[command(flatten)]
    pub webhook: WebhookArgs,
    /// Namespace of the Secret that keeps the certificate the operator makes (default: the
    /// pod's namespace, else `default`).
    #[arg(long)]
    pub namespace: Option<String>,
    /// Log format.
    #[arg(long, env = "GPUCLOUD_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

pub async fn run(args: ConversionWebhookArgs) -> anyhow::Result<()> {
    telemetry::init(args.log_format);
    let kube = kube::Client::try_default().await.context(
        "no Kubernetes cluster: set KUBECONFIG, or run inside a cluster with a service account",
    )?;
    let namespace = super::process::own_namespace(args.namespace.clone());
    let Some(webhook) = args.webhook.webhook(&namespace, crd_names())? else {
        bail!("--conversion-webhook-addr is needed: the address to serve the webhook on");
    };
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let started = start(kube, webhook, stopped(stop_rx)).await?;
    super::process::termination().await;
    info!("shutting down");
    let _ = stop_tx.send(true);
    let _ = started.stopped.await;
    Ok(())
}

/// The names of the CRDs the webhook converts for: every kind's.
pub fn crd_names() -> Vec<String> {
    crate::kinds::crds()
        .into_iter()
        .filter_map(|crd| crd.metadata.name)
        .collect()
}

/// Starts the webhook, saying what failed to start.
pub async fn start(
    kube: kube::Client,
    webhook: Webhook,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<Started> {
    let listen = webhook.listen;
    crate::app::conversion::start(kube, webhook, shutdown)
        .await
        .with_context(|| format!("could not start the conversion webhook on {listen}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> anyhow::Result<Option<Webhook>> {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            webhook: WebhookArgs,
        }
        let mut argv = vec!["x"];
        argv.extend_from_slice(extra);
        Cli::try_parse_from(argv)?
            .webhook
            .webhook("gpucloud-system", vec![])
    }

    #[test]
    fn not_served_without_an_address() {
        assert!(args(&[]).unwrap().is_none());
        let err = args(&["--conversion-webhook-service", "ns/hook"]).unwrap_err();
        assert!(
            err.to_string().contains("--conversion-webhook-addr"),
            "{err}"
        );
    }

    #[test]
    fn a_service_is_its_namespace_name_and_port() {
        let hook = args(&[
            "--conversion-webhook-addr=0.0.0.0:9443",
            "--conversion-webhook-service=gpucloud-operator-webhook",
        ])
        .unwrap()
        .unwrap();
        let Certificate::Own {
            address,
            namespace,
            secret,
        } = hook.certificate
        else {
            panic!("{:?}", hook.certificate)
        };
        assert_eq!(
            (namespace.as_str(), secret.as_str()),
            ("gpucloud-system", "gpucloud-operator-webhook-tls")
        );
        assert_eq!(
            address,
            Address::Service {
                namespace: "gpucloud-system".into(),
                name: "gpucloud-operator-webhook".into(),
                port: 443
            }
        );
        assert_eq!(
            service_address("ns/hook:8443", "own").unwrap(),
            Address::Service {
                namespace: "ns".into(),
                name: "hook".into(),
                port: 8443
            }
        );
    }

    #[test]
    fn one_certificate_source_and_a_well_formed_one() {
        let addr = "--conversion-webhook-addr=127.0.0.1:9443";
        for (extra, words) in [
            (vec![addr], "exactly one of"),
            (
                vec![
                    addr,
                    "--conversion-webhook-service=ns/a",
                    "--conversion-webhook-url=https://h/convert",
                ],
                "exactly one of",
            ),
            (
                vec![addr, "--conversion-webhook-service=ns/"],
                "NAMESPACE/NAME",
            ),
            (
                vec![addr, "--conversion-webhook-service=ns/hook:0"],
                "1 to 65535",
            ),
            (
                vec![addr, "--conversion-webhook-url=http://h/convert"],
                "https://",
            ),
        ] {
            let err = args(&extra).unwrap_err().to_string();
            assert!(err.contains(words), "{extra:?}: {err}");
        }
    }

    #[test]
    fn with_cert_manager_the_crds_are_pointed_at_the_service_and_its_certificate() {
        let hook = args(&[
            "--conversion-webhook-addr=0.0.0.0:9443",
            "--conversion-webhook-cert-dir=/etc/webhook",
            "--conversion-webhook-service=gpucloud-operator-webhook",
            "--conversion-webhook-ca-from=gpucloud-system/gpucloud-operator-webhook",
        ])
        .unwrap()
        .unwrap();
        let Certificate::Files { dir, pointed } = hook.certificate else {
            panic!("{:?}", hook.certificate)
        };
        assert_eq!(dir, PathBuf::from("/etc/webhook"));
        let (address, from) = pointed.unwrap();
        assert_eq!(from, "gpucloud-system/gpucloud-operator-webhook");
        assert!(matches!(address, Address::Service { port: 443, .. }));
    }
}
