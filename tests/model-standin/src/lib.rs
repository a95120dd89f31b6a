//! A stand-in for the model APIs that the real agent CLIs call, for overseer's tests:
//! the Anthropic Messages API (Claude Code, through `ANTHROPIC_BASE_URL`) and the
//! OpenAI Responses API (codex, through a model provider's `base_url`). Each answer
//! follows a [`Scenario`]; every request is recorded as an [`Exchange`] for the tests
//! to read.

pub mod anthropic;
pub mod openai;
pub mod scenario;
mod sse;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Serialize;
use serde_json::{Value, json};

pub use scenario::{Last, Reply, Scenario, Turn, Usage, When};

/// Which API a request came in through.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    AnthropicMessages,
    OpenaiResponses,
}

/// One request and what the stand-in answered.
#[derive(Clone, Debug, Serialize)]
pub struct Exchange {
    /// When the request came, in milliseconds since the Unix epoch.
    pub received_ms: u64,
    pub api: Api,
    pub model: String,
    /// Whether the request offered the shell tool: the CLI's agent loop, not a side
    /// request (a title, a topic check). Only the agent loop follows the scenario.
    pub agent_loop: bool,
    pub last: Last,
    /// The scenario's turn that answered, if one fitted.
    pub turn: Option<usize>,
    pub reply: Reply,
    pub usage: Usage,
    pub body: Value,
}

struct Shared {
    script: scenario::Script,
    exchanges: Vec<Exchange>,
    /// A line per exchange is appended here (the binary's `--log`).
    log: Option<std::fs::File>,
}

#[derive(Clone)]
pub struct Server {
    /// `http://ADDRESS:PORT`: Claude Code's `ANTHROPIC_BASE_URL`; codex's provider
    /// `base_url` is this with `/v1`.
    pub url: String,
    shared: Arc<Mutex<Shared>>,
}

impl Server {
    /// Serves `scenario` on `address` (port 0: a free one) until the runtime ends.
    pub async fn start(address: SocketAddr, scenario: Scenario) -> std::io::Result<Server> {
        Self::start_logging(address, scenario, None).await
    }

    pub async fn start_logging(
        address: SocketAddr,
        scenario: Scenario,
        log: Option<std::fs::File>,
    ) -> std::io::Result<Server> {
        let listener = tokio::net::TcpListener::bind(address).await?;
        let url = format!("http://{}", listener.local_addr()?);
        let shared = Arc::new(Mutex::new(Shared {
            script: scenario::Script::new(scenario),
            exchanges: Vec::new(),
            log,
        }));
        let app = Router::new()
            .route("/v1/messages", post(messages))
            .route("/v1/messages/count_tokens", post(count_tokens))
            .route("/v1/responses", post(responses))
            .route("/v1/models", get(models))
            .fallback(unknown)
            .with_state(shared.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(Server { url, shared })
    }

    /// Every request so far, in order.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.shared.lock().unwrap().exchanges.clone()
    }

    /// The scenario's turns not yet used as often as scripted.
    pub fn unused_turns(&self) -> Vec<usize> {
        self.shared.lock().unwrap().script.unused()
    }
}

/// Picks the answer, records the exchange, and returns what to send.
fn answer(shared: &Mutex<Shared>, api: Api, body: Value, last: Last, agent_loop: bool) -> Exchange {
    let mut shared = shared.lock().unwrap();
    let turn = agent_loop.then(|| shared.script.answer(&last)).flatten();
    let (reply, usage) = match turn {
        Some(i) => {
            let t = shared.script.turn(i);
            (t.reply.clone(), t.usage)
        }
        None => (Reply::Text(scenario::UNSCRIPTED.into()), Usage::default()),
    };
    let received_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let exchange = Exchange {
        received_ms,
        api,
        model: body["model"].as_str().unwrap_or_default().to_string(),
        agent_loop,
        last,
        turn,
        reply,
        usage,
        body,
    };
    if let Some(log) = shared.log.as_mut() {
        use std::io::Write;
        let line = serde_json::to_value(&exchange).unwrap_or_default();
        let _ = writeln!(log, "{line}");
    }
    shared.exchanges.push(exchange.clone());
    exchange
}

/// The text of a message's content or a tool call's output as either API writes it: a
/// string, text parts (joined by lines), or an object holding `content`.
pub(crate) fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        other => other["content"].as_str().unwrap_or_default().to_string(),
    }
}

fn json_response(value: Value) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

/// A request of either API: parsed, answered from the scenario, recorded, and the
/// answer rendered as that API renders it (a stream when the request asked for one).
fn handle(shared: &Mutex<Shared>, api: Api, body: &Bytes) -> Response {
    let body: Value = match serde_json::from_slice(body) {
        Ok(body) => body,
        Err(error) => {
            let refusal =
                json!({"error": {"type": "invalid_request_error", "message": error.to_string()}});
            return (StatusCode::BAD_REQUEST, json_response(refusal)).into_response();
        }
    };
    let (last, agent_loop) = match api {
        Api::AnthropicMessages => (anthropic::last_message(&body), anthropic::agent_loop(&body)),
        Api::OpenaiResponses => (openai::last_message(&body), openai::agent_loop(&body)),
    };
    let stream = body["stream"] == true;
    let id = shared.lock().unwrap().exchanges.len() as u64;
    let e = answer(shared, api, body, last, agent_loop);
    let events =
        |events: String| ([(header::CONTENT_TYPE, "text/event-stream")], events).into_response();
    match (api, stream) {
        (Api::AnthropicMessages, true) => events(anthropic::stream(&e.body, &e.reply, e.usage, id)),
        (Api::AnthropicMessages, false) => {
            json_response(anthropic::message(&e.body, &e.reply, e.usage, id))
        }
        (Api::OpenaiResponses, true) => events(openai::stream(&e.body, &e.reply, e.usage, id)),
        (Api::OpenaiResponses, false) => {
            json_response(openai::response(&e.body, &e.reply, e.usage, id))
        }
    }
}

async fn messages(State(shared): State<Arc<Mutex<Shared>>>, body: Bytes) -> Response {
    handle(&shared, Api::AnthropicMessages, &body)
}

async fn count_tokens() -> Response {
    json_response(json!({"input_tokens": Usage::default().input_tokens}))
}

async fn responses(State(shared): State<Arc<Mutex<Shared>>>, body: Bytes) -> Response {
    handle(&shared, Api::OpenaiResponses, &body)
}

async fn models() -> Response {
    json_response(json!({"object": "list", "data": []})).into_response()
}

async fn unknown(uri: Uri) -> Response {
    eprintln!("model-standin: no such endpoint {uri}");
    (
        StatusCode::NOT_FOUND,
        format!("the stand-in model serves no {uri}\n"),
    )
        .into_response()
}
