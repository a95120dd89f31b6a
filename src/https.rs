//! The one way overseer builds an HTTP client of its own (webhooks, GitHub, the OTLP
//! collector): hyper over rustls with the system's roots, `http` allowed for
//! endpoints inside the cluster or on loopback.

use http_body_util::Full;
use hyper::body::Bytes;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::{Builder, Client, connect::HttpConnector};
use hyper_util::rt::TokioExecutor;

pub type HttpsClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// A client built by `configure` (pool settings); an error when the system has no TLS
/// roots to check servers against.
pub fn client(configure: impl FnOnce(&mut Builder)) -> Result<HttpsClient, String> {
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_native_roots()
        .map_err(|e| format!("no TLS roots: {e}"))?
        .https_or_http()
        .enable_http1()
        .build();
    let mut builder = Client::builder(TokioExecutor::new());
    configure(&mut builder);
    Ok(builder.build(connector))
}
