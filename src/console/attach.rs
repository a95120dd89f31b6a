//! The attach page's terminal: a WebSocket, upgraded here on the console's own server,
//! bridged to `tmux attach` in the agent's container by an exec made with the person's
//! own client (so only a person allowed `pods/exec` gets one, and a refusal is the API
//! server's). Bytes from the pod go to the page as binary messages; the page's keys
//! come back as binary messages, and its size as a text message `{"cols":C,"rows":R}`.
//! A WebSocket is not held back by the browser's same-origin rule, so the upgrade
//! needs the console's own Origin and its CSRF token (as the subprotocol
//! `overseer.csrf.TOKEN`, never in the URL).

use std::sync::Arc;

use axum::extract::{RawQuery, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use futures::{SinkExt, StreamExt};
use hyper_util::rt::TokioIo;
use kube::api::{AttachParams, TerminalSize};
use serde::Deserialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::Role;

use super::context::{Console, equal_in_constant_time, named, query};
use crate::kinds::agent_pod::CONTAINER;

/// The subprotocol prefix that carries the page's CSRF token.
const PROTOCOL: &str = "overseer.csrf.";
/// RFC 6455's key suffix.
const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// The page's size message.
#[derive(Deserialize, Debug, PartialEq)]
struct Size {
    cols: u16,
    rows: u16,
}

/// Whether an upgrade comes from the console's page: its Origin, and its token among
/// the offered subprotocols. Returns the subprotocol to accept.
pub fn from_the_page(console: &Console, headers: &HeaderMap) -> Result<String, String> {
    let text = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    let origin = text(header::ORIGIN).unwrap_or_default();
    if !console.is_own_origin(origin) {
        return Err(format!("a terminal from {origin:?} is not the console's"));
    }
    let wanted = format!("{PROTOCOL}{}", console.csrf);
    text(header::SEC_WEBSOCKET_PROTOCOL)
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .find(|p| equal_in_constant_time(p.as_bytes(), wanted.as_bytes()))
        .map(str::to_string)
        .ok_or_else(|| {
            "this terminal did not come from the console's page (no valid CSRF token)".into()
        })
}

/// RFC 6455's answer to `key`.
pub fn accept(key: &str) -> String {
    let digest = ring::digest::digest(
        &ring::digest::SHA1_FOR_LEGACY_USE_ONLY,
        format!("{key}{GUID}").as_bytes(),
    );
    base64::engine::general_purpose::STANDARD.encode(digest.as_ref())
}

/// `GET /api/attach?namespace=NS&name=AGENT`, upgraded to a WebSocket.
pub async fn upgrade(
    State(console): State<Arc<Console>>,
    RawQuery(raw): RawQuery,
    mut request: Request,
) -> Response {
    let headers = request.headers();
    let protocol = match from_the_page(&console, headers) {
        Ok(protocol) => protocol,
        Err(reason) => return (StatusCode::FORBIDDEN, reason).into_response(),
    };
    let upgrading = headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    let key = headers
        .get(header::SEC_WEBSOCKET_KEY)
        .and_then(|v| v.to_str().ok())
        .map(accept);
    let (true, Some(answer)) = (upgrading, key) else {
        return (StatusCode::BAD_REQUEST, "a WebSocket upgrade is expected").into_response();
    };
    let (namespace, name) = match named(&query(raw)) {
        Ok(named) => named,
        Err(reason) => return (StatusCode::BAD_REQUEST, reason).into_response(),
    };
    let Some(on_upgrade) = request
        .extensions_mut()
        .remove::<hyper::upgrade::OnUpgrade>()
    else {
        return (StatusCode::BAD_REQUEST, "the connection cannot be upgraded").into_response();
    };
    tokio::spawn(async move {
        if let Ok(upgraded) = on_upgrade.await {
            let socket =
                WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
            bridge(socket, &namespace, &name).await;
        }
    });
    let mut response = StatusCode::SWITCHING_PROTOCOLS.into_response();
    let answer_headers = response.headers_mut();
    answer_headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    answer_headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    for (name, value) in [
        (header::SEC_WEBSOCKET_ACCEPT, answer),
        (header::SEC_WEBSOCKET_PROTOCOL, protocol),
    ] {
        if let Ok(value) = HeaderValue::from_str(&value) {
            answer_headers.insert(name, value);
        }
    }
    response
}

type Socket = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

/// Joins the agent's tmux session and carries bytes both ways until either side ends;
/// a refusal (no pod, no right to exec, a headless agent) is said to the page.
async fn bridge(mut socket: Socket, namespace: &str, name: &str) {
    let ended = match join(&mut socket, namespace, name).await {
        Ok(()) => "the session ended".to_string(),
        Err(reason) => reason,
    };
    let said = serde_json::json!({"end": ended}).to_string();
    let _ = socket.send(Message::Text(said.into())).await;
    let _ = socket.close(None).await;
}

async fn join(socket: &mut Socket, namespace: &str, name: &str) -> Result<(), String> {
    let (agent, pods, pod) = crate::commands::agent::current_pod(Some(namespace), name)
        .await
        .map_err(|e| e.to_string())?;
    if agent.spec.runtime.mode == Some(crate::api::RuntimeMode::Headless) {
        return Err(format!(
            "agent {name} runs headless: it has no session to attach to; its session above follows its runs"
        ));
    }
    let mut process = pods
        .exec(
            &pod,
            crate::commands::session::tmux_attach("xterm-256color"),
            &AttachParams::interactive_tty().container(CONTAINER),
        )
        .await
        .map_err(|e| match e {
            kube::Error::Api(status) => status.message,
            other => other.to_string(),
        })?;
    let (Some(mut stdin), Some(mut stdout)) = (process.stdin(), process.stdout()) else {
        return Err("the exec gave no terminal".into());
    };
    let mut size = process.terminal_size();
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        tokio::select! {
            read = stdout.read(&mut buffer) => match read {
                Ok(0) | Err(_) => return Ok(()),
                Ok(n) => {
                    let bytes = buffer[..n].to_vec();
                    socket.send(Message::Binary(bytes.into())).await.map_err(|e| e.to_string())?;
                }
            },
            message = socket.next() => match message {
                Some(Ok(Message::Binary(keys))) => {
                    stdin.write_all(&keys).await.map_err(|e| e.to_string())?;
                }
                Some(Ok(Message::Text(text))) => {
                    if let (Ok(wanted), Some(size)) = (serde_json::from_str::<Size>(&text), size.as_mut()) {
                        let _ = size
                            .send(TerminalSize { width: wanted.cols, height: wanted.rows })
                            .await;
                    }
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return Ok(()),
                Some(Ok(_)) => {}
            },
        }
    }
}
