//! What the console's handlers share: the caches, the person's client, and the page's
//! CSRF token and hosts, which every action and upgrade is checked against.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use serde_json::Value;
use tokio::sync::OnceCell;

use super::live::Live;

/// An action's answer: its status and its JSON, made once and read by every post of
/// its key.
pub(crate) type Answer = Arc<OnceCell<(StatusCode, Value)>>;

/// What the handlers share.
pub struct Console {
    pub live: Live,
    pub client: kube::Client,
    /// The token every action must carry (in the page, never in a URL).
    pub csrf: String,
    /// The hosts the console answers to: `127.0.0.1:PORT` and `localhost:PORT`.
    pub hosts: Vec<String>,
    /// The namespace of an object that names none (the kubeconfig's).
    pub default_namespace: String,
    /// Each action's answer by its key, so that it is done once.
    pub(crate) done: Mutex<HashMap<String, Answer>>,
}

impl Console {
    pub fn new(live: Live, client: kube::Client, port: u16, default_namespace: String) -> Self {
        Console {
            live,
            client,
            csrf: token(),
            hosts: vec![format!("127.0.0.1:{port}"), format!("localhost:{port}")],
            default_namespace,
            done: Mutex::new(HashMap::new()),
        }
    }
}

impl Console {
    /// Whether `origin` is the console's own page's.
    pub fn is_own_origin(&self, origin: &str) -> bool {
        self.hosts.iter().any(|h| origin == format!("http://{h}"))
    }
}

/// A request's query pairs.
pub(crate) fn query(raw: Option<String>) -> HashMap<String, String> {
    form_urlencoded::parse(raw.unwrap_or_default().as_bytes())
        .into_owned()
        .collect()
}

/// The object a query names by `namespace` and `name`, both required.
pub(crate) fn named(query: &HashMap<String, String>) -> Result<(String, String), String> {
    match (query.get("namespace"), query.get("name")) {
        (Some(ns), Some(name)) if !ns.is_empty() && !name.is_empty() => {
            Ok((ns.clone(), name.clone()))
        }
        _ => Err("namespace and name are required".to_string()),
    }
}

/// 32 random bytes, hex.
fn token() -> String {
    use ring::rand::{SecureRandom, SystemRandom};
    let mut bytes = [0u8; 32];
    SystemRandom::new()
        .fill(&mut bytes)
        .expect("the system's random source works");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `a` and `b` are equal, in a time that does not say where they differ.
pub(crate) fn equal_in_constant_time(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}
