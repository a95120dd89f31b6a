//! Where a notify webhook may be posted. A Goal's or Agent's author picks the URL, so
//! without a guard the operator would post from inside the cluster to whatever that
//! author names (the cloud's metadata service, the API server, another tenant's
//! service) and its Events would tell them whether the address answered. Internal
//! ranges are refused unless the operator's configuration allows them, and the check is
//! made on the very addresses the connection uses, so a name that resolves to a public
//! address when checked and to an internal one when connecting gains nothing.

use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper_util::client::legacy::connect::dns::Name;
use ipnet::IpNet;

/// The one message for every refused destination, whatever the reason (an internal
/// literal, a name that resolves only to internal addresses, a name that does not
/// resolve), so the Event tells a tenant nothing about the cluster's network.
pub const REFUSED: &str = "webhook refused: its host is not an address the operator may post to \
     (loopback, private, link-local, and cluster ranges are refused unless the operator allows them)";

/// Ranges no webhook reaches by default: loopback, private and shared address space,
/// link-local (which holds the cloud metadata services), multicast, reserved, and
/// their IPv6 counterparts. Cluster service and pod ranges are usually inside these;
/// ranges that are not are added with `--notify-refused-cidr`.
const INTERNAL: &[&str] = &[
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "224.0.0.0/4",
    "240.0.0.0/4",
    "::/128",
    "::1/128",
    "64:ff9b::/96",
    "fc00::/7",
    "fe80::/10",
    "ff00::/8",
];

/// The operator's rule for webhook destinations.
#[derive(Clone, Debug)]
pub struct Destinations {
    internal: Vec<IpNet>,
    /// Refused even when public or allowed: cluster ranges outside the internal ones.
    refused: Vec<IpNet>,
    /// Internal ranges the operator's configuration opens (an in-cluster receiver).
    allowed: Vec<IpNet>,
}

impl Default for Destinations {
    fn default() -> Self {
        Destinations::new(Vec::new(), Vec::new())
    }
}

impl Destinations {
    pub fn new(allowed: Vec<IpNet>, refused: Vec<IpNet>) -> Self {
        let internal = INTERNAL
            .iter()
            .map(|net| net.parse().expect("the built-in ranges parse"))
            .collect();
        Destinations {
            internal,
            refused,
            allowed,
        }
    }

    /// Whether a webhook may connect to `ip`: never to a refused range, then to an
    /// allowed one, then to anything not internal.
    pub fn permits(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        let within = |nets: &[IpNet]| nets.iter().any(|net| net.contains(&ip));
        !within(&self.refused) && (within(&self.allowed) || !within(&self.internal))
    }

    /// The addresses of `host` a webhook may connect to; Err (always `REFUSED`) when
    /// none. An IP literal is checked as it is.
    pub async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, &'static str> {
        let literal = host.trim_start_matches('[').trim_end_matches(']');
        let candidates: Vec<SocketAddr> = match literal.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => tokio::net::lookup_host((host, port))
                .await
                .map(Iterator::collect)
                .unwrap_or_default(),
        };
        let permitted: Vec<SocketAddr> = candidates
            .into_iter()
            .filter(|address| self.permits(address.ip()))
            .collect();
        if permitted.is_empty() {
            Err(REFUSED)
        } else {
            Ok(permitted)
        }
    }
}

/// A resolver for hyper's connector that hands it only permitted addresses.
#[derive(Clone, Debug)]
pub struct PermittedResolver(pub Arc<Destinations>);

impl tower::Service<Name> for PermittedResolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = std::io::Error;
    type Future =
        Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send + 'static>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let destinations = self.0.clone();
        Box::pin(async move {
            destinations
                .resolve(name.as_str(), 0)
                .await
                .map(Vec::into_iter)
                .map_err(|refused| {
                    std::io::Error::new(std::io::ErrorKind::PermissionDenied, refused)
                })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nets(list: &[&str]) -> Vec<IpNet> {
        list.iter().map(|net| net.parse().unwrap()).collect()
    }

    #[test]
    fn internal_addresses_are_refused_unless_allowed_and_refused_ranges_always() {
        let default = Destinations::default();
        let opened = Destinations::new(nets(&["127.0.0.0/8", "10.1.0.0/16"]), vec![]);
        let cluster = Destinations::new(
            nets(&["10.0.0.0/8"]),
            nets(&["10.96.0.0/12", "34.118.224.0/20"]),
        );
        let table = [
            // (address, default, opened, cluster)
            ("127.0.0.1", false, true, false),
            ("::1", false, false, false),
            ("::ffff:127.0.0.1", false, true, false),
            ("169.254.169.254", false, false, false),
            ("fe80::1", false, false, false),
            ("10.1.2.3", false, true, true),
            ("10.96.0.1", false, false, false),
            ("172.20.0.5", false, false, false),
            ("192.168.1.1", false, false, false),
            ("100.64.0.1", false, false, false),
            ("fd00::1", false, false, false),
            ("0.0.0.0", false, false, false),
            ("224.0.0.1", false, false, false),
            ("34.118.224.10", true, true, false),
            ("140.82.112.3", true, true, true),
            ("2606:4700::1111", true, true, true),
        ];
        for (address, by_default, when_opened, in_cluster) in table {
            let ip: IpAddr = address.parse().unwrap();
            assert_eq!(default.permits(ip), by_default, "{address} by default");
            assert_eq!(
                opened.permits(ip),
                when_opened,
                "{address} with ranges opened"
            );
            assert_eq!(
                cluster.permits(ip),
                in_cluster,
                "{address} with cluster ranges"
            );
        }
    }

    #[tokio::test]
    async fn names_and_literals_are_checked_on_what_they_resolve_to() {
        let default = Destinations::default();
        assert_eq!(default.resolve("localhost", 80).await, Err(REFUSED));
        assert_eq!(default.resolve("[::1]", 80).await, Err(REFUSED));
        assert_eq!(default.resolve("169.254.169.254", 80).await, Err(REFUSED));
        assert_eq!(
            default.resolve("no-such-host.invalid", 80).await,
            Err(REFUSED)
        );
        assert_eq!(
            default.resolve("140.82.112.3", 443).await,
            Ok(vec!["140.82.112.3:443".parse().unwrap()])
        );
        let opened = Destinations::new(nets(&["127.0.0.0/8"]), vec![]);
        let local = opened.resolve("localhost", 80).await.unwrap();
        assert!(
            local
                .iter()
                .all(|a| a.ip().is_loopback() && a.ip().is_ipv4()),
            "{local:?}"
        );
    }
}
