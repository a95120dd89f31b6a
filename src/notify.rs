//! The notify webhook: a JSON POST to a URL kept in a Secret. A failed send is an
//! Event on the object; it never fails a goal or an agent.

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
        Ok(url) => post_json(&url, payload).await,
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

/// Posts `payload` to `url`; Ok only on a 2xx answer within 10 seconds.
#[tracing::instrument(skip_all)]
pub async fn post_json(url: &str, payload: &serde_json::Value) -> Result<(), String> {
    let client = crate::https::client(|_| {})?;
    let request = http::Request::post(url)
        .header("content-type", "application/json")
        .header("user-agent", "overseer")
        .body(Full::new(Bytes::from(payload.to_string())))
        .map_err(|e| format!("invalid webhook URL: {e}"))?;
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
