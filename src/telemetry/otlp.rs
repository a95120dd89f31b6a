//! Spans exported to an OpenTelemetry collector over OTLP (HTTP/protobuf), switched on
//! by the standard variables: `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), then `OTEL_SERVICE_NAME`,
//! `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_BSP_*` as the
//! OpenTelemetry SDK reads them. Without an endpoint nothing is exported.

use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use opentelemetry::trace::TracerProvider;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{SpanExporter, WithHttpConfig};
use opentelemetry_sdk::{Resource, trace::SdkTracerProvider};
use tracing_subscriber::{Layer, registry::LookupSpan};

const ENDPOINT_VARIABLES: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];

/// The longest a collector may take to answer one export.
const EXPORT_DEADLINE: Duration = Duration::from_secs(10);

/// The most of a collector's answer read (its body is a small status message).
const ANSWER_LIMIT: usize = 64 * 1024;

/// A running export.
pub struct Export {
    provider: SdkTracerProvider,
    pub endpoint: String,
}

impl Export {
    /// Sends the spans still queued and stops.
    pub fn shutdown(self) {
        let shutdown = || self.provider.shutdown();
        // The export's requests run on the runtime (`Collector`), so a worker blocked
        // here must hand its work to another first.
        let result = match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
            Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(shutdown),
            _ => shutdown(),
        };
        if let Err(error) = result {
            tracing::warn!(%error, "the last spans were not exported");
        }
    }
}

/// The export and its tracing layer when an endpoint is set; a message when one is
/// set but the exporter cannot be built from the variables.
pub fn from_env<S>() -> Result<Option<(Export, impl Layer<S>)>, String>
where
    S: tracing::Subscriber + for<'span> LookupSpan<'span>,
{
    let Some(endpoint) = ENDPOINT_VARIABLES
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
    else {
        return Ok(None);
    };
    let runtime = tokio::runtime::Handle::try_current()
        .map_err(|_| "OTLP export needs the tokio runtime".to_string())?;
    let exporter = SpanExporter::builder()
        .with_http()
        .with_http_client(Collector::new(runtime)?)
        .build()
        .map_err(|e| format!("OTLP exporter: {e}"))?;
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("overseer");
    }
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("overseer"));
    Ok(Some((Export { provider, endpoint }, layer)))
}

/// The exporter's HTTP client: the operator's hyper and rustls stack, with the
/// system's roots for an `https` collector. The SDK exports from a thread of its own,
/// so each request is run on the operator's runtime and awaited from there.
#[derive(Debug)]
struct Collector {
    client: crate::https::HttpsClient,
    runtime: tokio::runtime::Handle,
}

impl Collector {
    fn new(runtime: tokio::runtime::Handle) -> Result<Collector, String> {
        Ok(Collector {
            client: crate::https::client(|_| {}).map_err(|e| format!("OTLP collector: {e}"))?,
            runtime,
        })
    }
}

#[async_trait::async_trait]
impl HttpClient for Collector {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self.client.clone();
        let exchange = async move {
            let (parts, body) = client.request(request.map(Full::new)).await?.into_parts();
            let body = Limited::new(body, ANSWER_LIMIT).collect().await?.to_bytes();
            Ok::<_, HttpError>(Response::from_parts(parts, body))
        };
        // Built inside the task: a timer made on the SDK's thread finds no runtime.
        let deadline = async move { tokio::time::timeout(EXPORT_DEADLINE, exchange).await };
        match self.runtime.spawn(deadline).await? {
            Ok(answer) => answer,
            Err(_) => Err(format!("no answer from the collector in {EXPORT_DEADLINE:?}").into()),
        }
    }
}
