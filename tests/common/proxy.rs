//! A TCP forwarder between one operator and the apiserver, which the test can cut off and
//! restore: a network partition of that operator alone. The operator's kube client is
//! built from the operator's kubeconfig with only the port changed to the proxy's (the
//! apiserver's certificate names its host, which stays), so TLS still verifies end to end.

use std::net::SocketAddr;

use tokio::io::copy_bidirectional;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// What the proxy does with connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Forwards them.
    Open,
    /// Closes those open and every new one at once: the apiserver is unreachable.
    Cut,
    /// Holds those open and every new one without a byte either way: an apiserver (or a
    /// network) that hangs, which only a time limit gets out of.
    Stall,
}

pub struct Proxy {
    addr: SocketAddr,
    mode: watch::Sender<Mode>,
    task: JoinHandle<()>,
}

impl Proxy {
    /// A proxy on a loopback port forwarding to `upstream` (`host:port`).
    pub async fn start(upstream: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the proxy");
        let addr = listener.local_addr().expect("the proxy's address");
        let (mode, mode_rx) = watch::channel(Mode::Open);
        let task = tokio::spawn(serve(listener, upstream, mode_rx));
        Self { addr, mode, task }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// From now on, does `mode` with every connection, those open included.
    pub fn set(&self, mode: Mode) {
        self.mode.send_replace(mode);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(listener: TcpListener, upstream: String, mode: watch::Receiver<Mode>) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        let now = *mode.borrow();
        match now {
            Mode::Open => {
                tokio::spawn(forward(client, upstream.clone(), mode.clone()));
            }
            Mode::Cut => drop(client),
            Mode::Stall => {
                tokio::spawn(hold(client, None, mode.clone()));
            }
        }
    }
}

/// Copies both ways until either side closes or the mode changes: a cut closes both
/// sides, a stall holds them silent until the next change, then closes them.
async fn forward(mut client: TcpStream, upstream: String, mut mode: watch::Receiver<Mode>) {
    let Ok(mut server) = TcpStream::connect(&upstream).await else {
        return;
    };
    let changed = tokio::select! {
        _ = copy_bidirectional(&mut client, &mut server) => return,
        changed = mode.wait_for(|m| *m != Mode::Open) => changed.map(|m| *m).ok(),
    };
    if changed == Some(Mode::Stall) {
        hold(client, Some(server), mode).await;
    }
}

/// Keeps the connection open and silent until the mode changes from a stall.
async fn hold(client: TcpStream, server: Option<TcpStream>, mut mode: watch::Receiver<Mode>) {
    let _ = mode.wait_for(|m| *m != Mode::Stall).await;
    drop((client, server));
}

/// The kubeconfig the operator signs in with (see `super::operator::operator_kubeconfig`).
fn operator_kubeconfig_path() -> String {
    super::operator::operator_kubeconfig()
        .or_else(|| std::env::var("KUBECONFIG").ok())
        .expect("KUBECONFIG is set")
}

/// A proxy to the apiserver of the operator's kubeconfig, and a kube client through it.
pub async fn apiserver_proxy() -> (Proxy, kube::Client) {
    let kubeconfig = kube::config::Kubeconfig::read_from(operator_kubeconfig_path())
        .expect("the operator's kubeconfig");
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("a usable kubeconfig");
    let url = config.cluster_url.clone();
    let host = url.host().expect("the apiserver's host").to_string();
    let port = url.port_u16().unwrap_or(443);
    let proxy = Proxy::start(format!("{host}:{port}")).await;
    // The apiserver's certificate names its host (127.0.0.1 for the test control plane):
    // the client speaks to the proxy's port on the loopback address, and verifies the
    // certificate against the apiserver's own host name.
    let through = format!("https://127.0.0.1:{}", proxy.addr().port());
    config.cluster_url = through.parse().expect("the proxy's URL");
    if host != "127.0.0.1" {
        config.tls_server_name = Some(host);
    }
    let client = kube::Client::try_from(config).expect("a client through the proxy");
    (proxy, client)
}
