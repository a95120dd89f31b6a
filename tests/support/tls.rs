//! A TLS listener's acceptor from PEM files, for the test servers (the chaos proxy,
//! the git server), on the ring provider the operator's own stack uses.

use std::path::Path;
use std::sync::Arc;

use rustls_pki_types::pem::PemObject;

pub fn acceptor(cert: &Path, key: &Path) -> tokio_rustls::TlsAcceptor {
    let certs: Vec<_> = rustls_pki_types::CertificateDer::pem_file_iter(cert)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = rustls_pki_types::PrivateKeyDer::from_pem_file(key).unwrap();
    let tls = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    tokio_rustls::TlsAcceptor::from(Arc::new(tls))
}
