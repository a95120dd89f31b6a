//! The one way overseer builds an HTTP client of its own (webhooks, GitHub, the OTLP
//! collector): hyper over rustls with the system's roots, `http` allowed for
//! endpoints inside the cluster or on loopback.

mod destinations;

pub use destinations::{Destinations, PermittedResolver, REFUSED};

use http_body_util::Full;
use hyper::body::Bytes;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::{HttpConnector, dns::Name};
use hyper_util::client::legacy::{Builder, Client};
use hyper_util::rt::TokioExecutor;

pub type HttpsClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// A client built by `configure` (pool settings); an error when the system has no TLS
/// roots to check servers against.
pub fn client(configure: impl FnOnce(&mut Builder)) -> Result<HttpsClient, String> {
    let mut builder = Client::builder(TokioExecutor::new());
    configure(&mut builder);
    Ok(builder.build(https_or_http(HttpConnector::new())?))
}

/// A client that connects only to the addresses `resolver` hands it: the notify
/// webhook's, whose host a tenant names.
pub fn client_through<R>(
    resolver: R,
) -> Result<Client<HttpsConnector<HttpConnector<R>>, Full<Bytes>>, String>
where
    R: tower::Service<Name, Error = std::io::Error> + Clone + Send + Sync + 'static,
    R::Response: Iterator<Item = std::net::SocketAddr>,
    R::Future: Send,
{
    let connector = https_or_http(HttpConnector::new_with_resolver(resolver))?;
    Ok(Client::builder(TokioExecutor::new()).build(connector))
}

fn https_or_http<R>(
    mut http: HttpConnector<R>,
) -> Result<HttpsConnector<HttpConnector<R>>, String> {
    http.enforce_http(false);
    Ok(hyper_rustls::HttpsConnectorBuilder::new()
        .with_native_roots()
        .map_err(|e| format!("no TLS roots: {e}"))?
        .https_or_http()
        .enable_http1()
        .wrap_connector(http))
}
