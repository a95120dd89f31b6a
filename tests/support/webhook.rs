//! A webhook receiver on this machine: it answers every request 204 and hands each
//! request (its first 64 KiB: request line, headers, body) to the test.

use k8s_openapi::api::core::v1::Secret;
use kube::api::PostParams;
use tokio::sync::mpsc::UnboundedReceiver;

use super::cluster::TestNamespace;

pub struct Webhook {
    /// Where it listens: `http://127.0.0.1:PORT/hook`.
    pub url: String,
    pub requests: UnboundedReceiver<String>,
}

impl Webhook {
    pub async fn start() -> Webhook {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let (tx, requests) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                let mut buffer = vec![0u8; 65536];
                let n = socket.read(&mut buffer).await.unwrap();
                let _ = tx.send(String::from_utf8_lossy(&buffer[..n]).to_string());
                let _ = socket
                    .write_all(b"HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n")
                    .await;
            }
        });
        Webhook { url, requests }
    }

    /// The next request, within `wait`; panics naming `what` otherwise.
    pub async fn next(&mut self, what: &str, wait: std::time::Duration) -> String {
        tokio::time::timeout(wait, self.requests.recv())
            .await
            .unwrap_or_else(|_| panic!("no webhook request: {what}"))
            .unwrap()
    }
}

/// A Secret `name` of `ns` whose key `url` holds `url`.
pub async fn url_secret(ns: &TestNamespace, name: &str, url: &str) {
    let secret: Secret = serde_json::from_value(
        serde_json::json!({"metadata": {"name": name}, "stringData": {"url": url}}),
    )
    .unwrap();
    ns.api::<Secret>()
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
}
