//! A listener of TLS connections for `axum::serve`: each connection's handshake runs in a
//! task of its own, with a time limit, so that a client that stalls in its handshake holds
//! up no other (the kubelet's probes among them). Finished handshakes queue for the server.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::server::TlsStream;
use tracing::debug;

/// How long a client has to finish its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Connections whose handshake is done and that the server has not taken yet.
const QUEUE: usize = 64;

pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    /// Starts accepting on `tcp`; the accepting stops once the listener is dropped.
    pub fn new(tcp: TcpListener, config: Arc<ServerConfig>) -> io::Result<Self> {
        let local = tcp.local_addr()?;
        let (done, ready) = mpsc::channel(QUEUE);
        tokio::spawn(accept(tcp, TlsAcceptor::from(config), done));
        Ok(Self { ready, local })
    }
}

async fn accept(
    tcp: TcpListener,
    acceptor: TlsAcceptor,
    done: mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
) {
    loop {
        let accepted = tokio::select! {
            _ = done.closed() => return,
            accepted = tcp.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(pair) => pair,
            Err(err) => {
                // Such as too many open files: wait for some to close rather than spin.
                debug!(error = %err, "could not accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let acceptor = acceptor.clone();
        let done = done.clone();
        tokio::spawn(async move {
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => {
                    let _ = done.send((tls, peer)).await;
                }
                Ok(Err(err)) => debug!(peer = %peer, error = %err, "TLS handshake failed"),
                Err(_) => debug!(peer = %peer, "TLS handshake timed out"),
            }
        });
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(connection) => connection,
            // The accepting task ended: no connection will come again.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.local)
    }
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::routing::get;
    use tokio::io::AsyncWriteExt as _;

    use super::super::certificate::server_config;
    use super::*;

    async fn serving() -> SocketAddr {
        let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let listener = TlsListener::new(tcp, server_config(None).unwrap()).unwrap();
        let local = axum::serve::Listener::local_addr(&listener).unwrap();
        let app = Router::new().route("/healthz", get(|| async { "ok" }));
        tokio::spawn(async move { axum::serve(listener, app).await });
        local
    }

    fn client() -> reqwest::Client {
        reqwest::Client::builder()
            .tls_danger_accept_invalid_certs(true)
            .build()
            .unwrap()
    }

    #[tokio::test]
    async fn it_answers_https_and_not_plain_http() {
        let local = serving().await;
        let answer = client()
            .get(format!("https://{local}/healthz"))
            .send()
            .await
            .expect("an HTTPS answer");
        assert_eq!(answer.text().await.unwrap(), "ok");
        let plain = reqwest::get(format!("http://{local}/healthz")).await;
        assert!(plain.is_err(), "plain HTTP is refused: {plain:?}");
    }

    #[tokio::test]
    async fn a_stalled_handshake_holds_up_no_other_connection() {
        let local = serving().await;
        // Half a ClientHello, and then nothing.
        let mut stalled = TcpStream::connect(local).await.unwrap();
        stalled
            .write_all(&[0x16, 0x03, 0x01, 0x02, 0x00])
            .await
            .unwrap();
        let answer = tokio::time::timeout(
            Duration::from_secs(5),
            client().get(format!("https://{local}/healthz")).send(),
        )
        .await
        .expect("answered while another handshake stalls")
        .expect("an HTTPS answer");
        assert!(answer.status().is_success());
    }
}
