//! Logging with tracing: text or JSON, level from `--log-level` or `RUST_LOG`; with the
//! `otlp` feature, spans also exported to an OpenTelemetry collector (`otlp.rs`).

#[cfg(feature = "otlp")]
mod otlp;

use clap::ValueEnum;
use tracing_subscriber::{EnvFilter, Layer, Registry, fmt, prelude::*};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// What `init` set up beyond logging: held until the process ends, when dropping it
/// sends the spans not yet exported.
#[must_use = "dropping it stops the trace export"]
pub struct Telemetry {
    #[cfg(feature = "otlp")]
    traces: Option<otlp::Export>,
}

/// Installs the global subscriber. `level` is an `EnvFilter` directive such as
/// `info` or `overseer=debug,kube=info`.
pub fn init(format: LogFormat, level: &str) -> Telemetry {
    let filter = EnvFilter::try_new(level).unwrap_or_else(|_| EnvFilter::new("info"));
    let logs: Box<dyn Layer<Registry> + Send + Sync> = match format {
        // Colour codes only for a person's terminal: in a pod the log is read by
        // `kubectl logs`, `overseer peek` and log collectors, never by a terminal.
        LogFormat::Text => fmt::layer()
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_writer(std::io::stderr)
            .boxed(),
        LogFormat::Json => fmt::layer().json().with_writer(std::io::stderr).boxed(),
    };
    #[cfg(feature = "otlp")]
    {
        let (traces, layer, failure) = match otlp::from_env() {
            Ok(Some((traces, layer))) => (Some(traces), Some(layer), None),
            Ok(None) => (None, None, None),
            Err(failure) => (None, None, Some(failure)),
        };
        tracing_subscriber::registry()
            .with(logs)
            .with(layer)
            .with(filter)
            .init();
        match (&traces, failure) {
            (Some(traces), _) => {
                tracing::info!(endpoint = %traces.endpoint, "exporting traces over OTLP")
            }
            (None, Some(failure)) => tracing::error!(%failure, "not exporting traces"),
            (None, None) => {}
        }
        Telemetry { traces }
    }
    #[cfg(not(feature = "otlp"))]
    {
        tracing_subscriber::registry()
            .with(logs)
            .with(filter)
            .init();
        Telemetry {}
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        #[cfg(feature = "otlp")]
        if let Some(traces) = self.traces.take() {
            traces.shutdown();
        }
    }
}
