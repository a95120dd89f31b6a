//! The notify webhook: a JSON POST to a URL kept in a Secret. A failed send is an
//! Event on the object; it never fails a goal or an agent. Only destinations the
//! operator permits are posted to (src/https/destinations.rs).

pub use crate::https::{Destinations, REFUSED};

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;

/// Posts `payload` to the webhook of `notify` (its URL read from a Secret of `object`'s
/// namespace) and records the outcome as an Event on `object`: `Notified`, or
/// `NotifyFailed` in words that never contain the URL.
pub async fn send<K: kube::Resource<DynamicType = ()>>(
    ctx: &crate::controller::Context,
    object: &K,
    notify: &crate::api::Notify,
    payload: &serde_json::Value,
) {
    let namespace = object.meta().namespace.clone().unwrap_or_default();
    let event = payload["event"].as_str().unwrap_or_default();
    let sent = match ctx.secret_text(&namespace, &notify.url_secret_ref).await {
        Ok(url) => post_json(&ctx.notify_destinations, &url, payload).await,
        Err(error) => Err(error),
    };
    match sent {
        Ok(()) => ctx.publish_about(
            object,
            false,
            crate::reasons::NOTIFIED,
            &format!("webhook notified: {event}"),
        ),
        Err(error) => ctx.publish_about(object, true, crate::reasons::NOTIFY_FAILED, &error),
    }
}

/// Posts `payload` to `url`; Ok only on a 2xx answer within 10 seconds from a
/// destination `destinations` permits. The check runs before the request, for a clear
/// message, and again in the connector on the addresses it connects to.
#[tracing::instrument(skip_all)]
pub async fn post_json(
    destinations: &std::sync::Arc<Destinations>,
    url: &str,
    payload: &serde_json::Value,
) -> Result<(), String> {
    let request = http::Request::post(url)
        .header("content-type", "application/json")
        .header("user-agent", "overseer")
        .body(Full::new(Bytes::from(payload.to_string())))
        .map_err(|_| "invalid webhook URL".to_string())?;
    let uri = request.uri();
    let port = match uri.scheme_str() {
        Some("https") => uri.port_u16().unwrap_or(443),
        Some("http") => uri.port_u16().unwrap_or(80),
        _ => return Err("invalid webhook URL: it must be http:// or https://".into()),
    };
    let host = uri.host().ok_or("invalid webhook URL: it has no host")?;
    destinations.resolve(host, port).await?;
    let client =
        crate::https::client_through(crate::https::PermittedResolver(destinations.clone()))?;
    let response = tokio::time::timeout(Duration::from_secs(10), client.request(request))
        .await
        .map_err(|_| "webhook did not answer in 10s".to_string())?
        .map_err(|e| format!("webhook unreachable: {e}"))?;
    let status = response.status();
    // Drain (a little of) the body so the connection closes cleanly; its content is
    // not ours to log, and a webhook that streams forever is cut off.
    let _ = tokio::time::timeout(
        Duration::from_secs(2),
        http_body_util::Limited::new(response.into_body(), 64 << 10).collect(),
    )
    .await;
    if status.is_success() {
        Ok(())
    } else {
        Err(format!("webhook answered {status}"))
    }
}
