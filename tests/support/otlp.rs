//! An OpenTelemetry collector's trace receiver, as far as the tests need one: it takes
//! OTLP/HTTP exports (`POST /v1/traces`), decodes them with the OTLP protobuf
//! definitions (opentelemetry-proto), and keeps every span it was sent.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use axum::{Router, body::Bytes, extract::State, routing::post};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{KeyValue, any_value::Value};
use prost::Message;

/// One span as the collector received it, with the string attributes of its resource.
#[derive(Clone, Debug)]
pub struct Span {
    pub resource: Vec<(String, String)>,
    pub name: String,
    pub attributes: Vec<(String, String)>,
    pub trace_id: Vec<u8>,
    pub span_id: Vec<u8>,
    /// Empty for a trace's root.
    pub parent_span_id: Vec<u8>,
}

impl Span {
    pub fn resource(&self, key: &str) -> Option<&str> {
        lookup(&self.resource, key)
    }

    pub fn attribute(&self, key: &str) -> Option<&str> {
        lookup(&self.attributes, key)
    }
}

fn lookup<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find_map(|(k, v)| (k == key).then_some(v.as_str()))
}

pub struct Collector {
    /// What `OTEL_EXPORTER_OTLP_ENDPOINT` is set to: `http://ADDRESS:PORT`.
    pub endpoint: String,
    spans: Arc<Mutex<Vec<Span>>>,
}

impl Collector {
    /// Listens on a free port of `address`.
    pub async fn start(address: IpAddr) -> Collector {
        let listener = tokio::net::TcpListener::bind(SocketAddr::new(address, 0))
            .await
            .expect("the collector's port");
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let spans = Arc::new(Mutex::new(Vec::new()));
        let app = Router::new()
            .route("/v1/traces", post(receive))
            .with_state(spans.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Collector { endpoint, spans }
    }

    /// The span that `child` was started in, waited for: a parent ends, and so is
    /// exported, after its children.
    pub async fn parent_of(&self, child: &Span) -> Span {
        let what = format!("the parent of span {}", child.name);
        super::cluster::wait_until(&what, std::time::Duration::from_secs(30), || {
            let found =
                self.find(|s| s.trace_id == child.trace_id && s.span_id == child.parent_span_id);
            async move { found }
        })
        .await
    }

    /// The first span received that `wanted` accepts.
    pub fn find(&self, wanted: impl Fn(&Span) -> bool) -> Option<Span> {
        self.spans
            .lock()
            .unwrap()
            .iter()
            .find(|s| wanted(s))
            .cloned()
    }
}

fn strings(attributes: &[KeyValue]) -> Vec<(String, String)> {
    attributes
        .iter()
        .filter_map(|kv| match kv.value.as_ref()?.value.as_ref()? {
            Value::StringValue(s) => Some((kv.key.clone(), s.clone())),
            _ => None,
        })
        .collect()
}

async fn receive(State(spans): State<Arc<Mutex<Vec<Span>>>>, body: Bytes) -> Vec<u8> {
    let request = ExportTraceServiceRequest::decode(body).expect("an OTLP trace export");
    let mut spans = spans.lock().unwrap();
    for resource_spans in request.resource_spans {
        let resource = strings(&resource_spans.resource.unwrap_or_default().attributes);
        for span in resource_spans.scope_spans.into_iter().flat_map(|s| s.spans) {
            spans.push(Span {
                resource: resource.clone(),
                name: span.name,
                attributes: strings(&span.attributes),
                trace_id: span.trace_id,
                span_id: span.span_id,
                parent_span_id: span.parent_span_id,
            });
        }
    }
    ExportTraceServiceResponse::default().encode_to_vec()
}
