//! The conversion webhook as the cert-manager install runs it (`deploy/components/cert-manager`,
//! the chart's `conversionWebhook.certManager`): the serving certificate is cert-manager's,
//! mounted from its Secret (`--conversion-webhook-cert-dir`), and the operator points the
//! CRDs at the webhook's Service with `cert-manager.io/inject-ca-from`, leaving `caBundle`
//! to cert-manager's cainjector. The test plays cert-manager: it issues the certificate from
//! a CA of its own, and writes that CA into the CRDs as the cainjector does.
//!
//! What must hold: the webhook serves the mounted certificate (a client trusting only the
//! test's CA converts through it, one trusting another CA is refused); every CRD says the
//! Service and the annotation; the operator makes no certificate Secret of its own; the
//! CA the injector wrote stays through the operator's later checks; and after SIGTERM the
//! webhook still converts through its drain (`--conversion-webhook-drain`), then exits 0.
//!
//! Isolation: the CRDs' `spec.conversion` is cluster-wide and every other suite relies on
//! the shared control plane's webhook, so the suite brings up a control plane of its own.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use serde_json::{Value, json};

use common::control_plane::OwnControlPlane;
use common::operator::{free_port, install_crds};

const CERTIFICATE: &str = "gpucloud-system/gpucloud-operator-webhook";
const SERVICE: &str = "gpucloud-system/gpucloud-operator-webhook";
const INJECT_CA_FROM: &str = "cert-manager.io/inject-ca-from";
/// The field manager the test writes `caBundle` under, as cert-manager's cainjector does.
const INJECTOR: &str = "cert-manager-cainjector";

/// A CA and a serving certificate for 127.0.0.1 it signed, as PEM: (CA, certificate, key).
fn issue() -> (String, String, String) {
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let serving = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = serving.signed_by(&key, &issuer).unwrap();
    (ca_cert.pem(), cert.pem(), key.serialize_pem())
}

/// The files of cert-manager's Secret, as its volume mounts them, in a folder removed when
/// dropped.
struct MountedSecret(PathBuf);

impl MountedSecret {
    fn new(ca: &str, cert: &str, key: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "gpucloud-cert-manager-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        for (file, text) in [("ca.crt", ca), ("tls.crt", cert), ("tls.key", key)] {
            std::fs::write(dir.join(file), text).unwrap();
        }
        Self(dir)
    }
}

impl Drop for MountedSecret {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// How long the webhook is still served after SIGTERM, in this test.
const DRAIN: Duration = Duration::from_secs(3);

/// `gpucloud-operator conversion-webhook` with the flags the cert-manager install gives;
/// killed when dropped.
struct Webhook(Child);

impl Webhook {
    fn start(kubeconfig: &Path, dir: &Path, port: u16) -> Self {
        let child = Command::new(env!("CARGO_BIN_EXE_gpucloud-operator"))
            .arg("conversion-webhook")
            .arg(format!("--conversion-webhook-addr=127.0.0.1:{port}"))
            .arg(format!("--conversion-webhook-cert-dir={}", dir.display()))
            .arg(format!("--conversion-webhook-service={SERVICE}"))
            .arg(format!("--conversion-webhook-ca-from={CERTIFICATE}"))
            .arg("--conversion-webhook-check-interval=1s")
            .arg(format!("--conversion-webhook-drain={}s", DRAIN.as_secs()))
            .arg("--namespace=gpucloud-system")
            .env("KUBECONFIG", kubeconfig)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start gpucloud-operator conversion-webhook");
        Self(child)
    }
}

impl Webhook {
    /// Sends SIGTERM, as the kubelet stops a pod.
    fn terminate(&self) {
        let sent = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -TERM failed");
    }

    /// Whether the process has exited, and how.
    fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.0.try_wait().expect("the webhook's process")
    }
}

impl Drop for Webhook {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Whether `crd` points at the Service, with the annotation, as the cert-manager install
/// wants.
fn pointed_for_cert_manager(crd: &CustomResourceDefinition) -> bool {
    let annotated = crd
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(INJECT_CA_FROM))
        .is_some_and(|from| from == CERTIFICATE);
    let service = crd
        .spec
        .conversion
        .as_ref()
        .filter(|c| c.strategy == "Webhook")
        .and_then(|c| c.webhook.as_ref()?.client_config.as_ref()?.service.as_ref());
    annotated
        && service.is_some_and(|s| {
            s.namespace == "gpucloud-system"
                && s.name == "gpucloud-operator-webhook"
                && s.path.as_deref() == Some("/convert")
                && s.port == Some(443)
        })
}

fn ca_bundle(crd: &CustomResourceDefinition) -> Option<Vec<u8>> {
    let client = crd
        .spec
        .conversion
        .as_ref()?
        .webhook
        .as_ref()?
        .client_config
        .as_ref()?;
    client.ca_bundle.as_ref().map(|b| b.0.clone())
}

/// A `v1alpha1` Pod converted to `v1beta1` by the webhook at `port`, through a client that
/// trusts `ca` alone.
async fn convert_through(port: u16, ca: &str) -> Result<Value, reqwest::Error> {
    let client = reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(ca.as_bytes())?])
        .build()?;
    let review = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {
            "uid": "4b3c1a2e-0000-4000-8000-000000000001",
            "desiredAPIVersion": "gpucloud.io/v1beta1",
            "objects": [{
                "apiVersion": "gpucloud.io/v1alpha1", "kind": "Pod",
                "metadata": {"name": "p", "namespace": "default"},
                "spec": {"image": "img:1", "dockerArgs": "serve"},
            }],
        },
    });
    client
        .post(format!("https://127.0.0.1:{port}/convert"))
        .json(&review)
        .send()
        .await?
        .error_for_status()?
        .json()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane binaries: run scripts/test.sh"]
async fn with_cert_manager_the_webhook_serves_its_certificate_and_leaves_the_ca_to_the_injector() {
    let cp = OwnControlPlane::up("webhook-cert-manager");
    let client = cp.client().await;
    install_crds(&client).await;
    let (ca, cert, key) = issue();
    let mounted = MountedSecret::new(&ca, &cert, &key);
    let port = free_port();
    let mut webhook = Webhook::start(&cp.kubeconfig, &mounted.0, port);

    // Every CRD points at the Service, its CA left to the injector.
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let names = gpucloud_operator::cli::webhook::crd_names();
    let pointed = common::wait_until(Duration::from_secs(30), || async {
        let mut all = true;
        for name in &names {
            let crd = crds.get(name).await.expect("read a CRD");
            all &= pointed_for_cert_manager(&crd) && ca_bundle(&crd).is_none();
        }
        all
    })
    .await;
    assert!(
        pointed,
        "the CRDs are not pointed at the Service for cert-manager"
    );

    // The webhook serves the mounted certificate, and converts.
    let mut answered = Err("not asked".to_string());
    for _ in 0..60 {
        answered = convert_through(port, &ca).await.map_err(|e| e.to_string());
        if answered.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let converted = answered.expect("the webhook did not convert within 30 s");
    let objects = &converted["response"]["convertedObjects"];
    assert_eq!(
        objects[0]["apiVersion"], "gpucloud.io/v1beta1",
        "{converted}"
    );
    assert_eq!(objects[0]["spec"]["args"], "serve", "{converted}");
    let (other_ca, _, _) = issue();
    assert!(
        convert_through(port, &other_ca).await.is_err(),
        "a client that trusts another CA was answered: the certificate is not the mounted one"
    );

    // The injector writes the CA; the operator's checks leave it.
    for name in &names {
        let patch = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {"conversion": {"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"],
                "clientConfig": {"caBundle": ByteString(ca.as_bytes().to_vec())},
            }}},
        });
        crds.patch(name, &PatchParams::apply(INJECTOR), &Patch::Apply(&patch))
            .await
            .unwrap_or_else(|e| panic!("inject the CA into {name}: {e}"));
    }
    // A check of the operator's after that: one CRD loses its annotation (as an apply of
    // the CRDs from deploy/crds does), and the operator puts it back.
    let first = &names[0];
    crds.patch(
        first,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {INJECT_CA_FROM: null}}})),
    )
    .await
    .expect("drop the annotation");
    let restored = common::wait_until(Duration::from_secs(30), || async {
        pointed_for_cert_manager(&crds.get(first).await.expect("read a CRD"))
    })
    .await;
    assert!(restored, "{first}: the operator did not point it again");
    for name in &names {
        let crd = crds.get(name).await.unwrap();
        assert!(
            pointed_for_cert_manager(&crd),
            "{name} was pointed elsewhere"
        );
        assert_eq!(
            ca_bundle(&crd).as_deref(),
            Some(ca.as_bytes()),
            "{name}: the injected CA was not kept"
        );
    }

    // cert-manager's Secret is the only certificate: the operator made none of its own.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "gpucloud-system");
    let own = secrets
        .get_opt("gpucloud-operator-webhook-tls")
        .await
        .expect("read Secrets");
    assert!(
        own.is_none(),
        "the operator made a certificate Secret beside cert-manager's"
    );

    // SIGTERM: it still converts through the drain, then ends, and nothing listens.
    webhook.terminate();
    let asked = tokio::time::Instant::now();
    let mut answered = 0;
    while asked.elapsed() < DRAIN - Duration::from_millis(500) {
        assert!(
            webhook.exited().is_none(),
            "the webhook ended {:?} after SIGTERM, within its {DRAIN:?} drain",
            asked.elapsed()
        );
        convert_through(port, &ca)
            .await
            .unwrap_or_else(|e| panic!("refused {:?} after SIGTERM: {e}", asked.elapsed()));
        answered += 1;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let exited = common::wait_until(Duration::from_secs(15), || {
        let status = webhook.exited();
        async move { status.is_some() }
    })
    .await;
    assert!(exited, "the webhook did not end within 15 s of its drain");
    let status = webhook.exited().expect("exited");
    assert!(status.success(), "the webhook ended with {status}");
    eprintln!(
        "drain: {answered} conversions answered after SIGTERM; ended {:?} after it",
        asked.elapsed()
    );
    assert!(
        convert_through(port, &ca).await.is_err(),
        "converted after the process ended"
    );
    drop(cp);
}
