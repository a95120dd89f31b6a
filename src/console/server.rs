//! The console's HTTP side: the page and its assets, the live views as server-sent
//! events, an agent's session, and the actions. Served on loopback only; every request
//! is checked for the Host it names (no DNS rebinding), every action for the page's
//! CSRF token, its Origin and a JSON body (so no other site's form can post one), and
//! every answer carries a strict Content Security Policy. The console holds no rights
//! of its own: reads and actions run with the person's client.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{RawQuery, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt;
use serde_json::{Value, json};

use super::actions::{self, Action};
use super::context::{Console, equal_in_constant_time, named, query};
use super::view::{self, Page, Snapshot};

const INDEX: &str = include_str!("assets/index.html");
const SCRIPT: &str = include_str!("assets/console.js");
const STYLE: &str = include_str!("assets/console.css");
const ATTACH: &str = include_str!("assets/attach.html");
const ATTACH_SCRIPT: &str = include_str!("assets/attach.js");
const XTERM: &str = include_str!("assets/vendor/xterm/xterm.js");
const XTERM_STYLE: &str = include_str!("assets/vendor/xterm/xterm.css");

/// Every answer's policy: only this origin's script and style, no inline code, no
/// frames, no forms posted anywhere.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
/// The attach page's policy: the same, but xterm.js sizes and colours its terminal with
/// `<style>` elements it makes, which need inline styles. Scripts stay this origin's
/// only, and images, fonts and connections too, so a style cannot send anything away.
const ATTACH_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
                          img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; \
                          frame-ancestors 'none'";
/// Changes closer together than this are shown as one.
const SETTLE: Duration = Duration::from_millis(100);
/// Actions remembered by their key, so that a second click or a retried request is
/// answered, not done again.
const REMEMBERED: usize = 1024;

/// The files the pages load, each with its type.
const ASSETS: [(&str, &str, &str); 5] = [
    ("/console.js", SCRIPT, "text/javascript; charset=utf-8"),
    ("/console.css", STYLE, "text/css; charset=utf-8"),
    (
        "/attach.js",
        ATTACH_SCRIPT,
        "text/javascript; charset=utf-8",
    ),
    ("/vendor/xterm.js", XTERM, "text/javascript; charset=utf-8"),
    ("/vendor/xterm.css", XTERM_STYLE, "text/css; charset=utf-8"),
];

pub fn router(console: Arc<Console>) -> Router {
    let assets = ASSETS
        .into_iter()
        .fold(Router::new(), |router, (path, text, kind)| {
            router.route(path, get(move || asset(text, kind)))
        });
    assets
        .route("/", get(index))
        .route("/attach", get(attach_page))
        .route("/api/attach", get(super::attach::upgrade))
        .route("/api/live", get(live))
        .route("/api/session", get(session))
        .route("/api/rights", get(rights))
        .route("/api/action", post(action))
        .layer(middleware::from_fn_with_state(console.clone(), guard))
        .with_state(console)
}

/// Refuses a request for another host; adds the security headers to every answer.
async fn guard(State(console): State<Arc<Console>>, request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    if !console.hosts.iter().any(|h| h == host) {
        return (
            StatusCode::MISDIRECTED_REQUEST,
            "not a host of this console",
        )
            .into_response();
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    // A page with a policy of its own (the attach page's) keeps it.
    headers
        .entry(header::CONTENT_SECURITY_POLICY)
        .or_insert(HeaderValue::from_static(CSP));
    for (name, value) in [
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    headers.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("same-origin"),
    );
    response
}

async fn index(State(console): State<Arc<Console>>) -> Response {
    let page = INDEX.replace("{{CSRF}}", &console.csrf);
    asset_owned(page, "text/html; charset=utf-8")
}

async fn attach_page(State(console): State<Arc<Console>>) -> Response {
    let mut page = asset_owned(
        ATTACH.replace("{{CSRF}}", &console.csrf),
        "text/html; charset=utf-8",
    );
    page.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(ATTACH_CSP),
    );
    page
}

async fn asset(text: &'static str, kind: &'static str) -> Response {
    asset_owned(text.to_string(), kind)
}

fn asset_owned(text: String, kind: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind)], text).into_response()
}

/// The page a query names: `view=runs`, or `view=swarm|agent|goal` with `namespace`
/// and `name`.
pub fn page_of(query: &HashMap<String, String>) -> Result<Page, String> {
    let object = |make: fn(String, String) -> Page| named(query).map(|(ns, name)| make(ns, name));
    match query.get("view").map(String::as_str) {
        Some("runs") | None => Ok(Page::Runs),
        Some("swarm") => object(|namespace, name| Page::Swarm { namespace, name }),
        Some("agent") => object(|namespace, name| Page::Agent { namespace, name }),
        Some("goal") => object(|namespace, name| Page::Goal { namespace, name }),
        Some(other) => Err(format!("no view {other:?}")),
    }
}

/// The page as server-sent events: the whole view at once, then again after each
/// change that alters it (changes 100 ms apart and closer are one).
async fn live(State(console): State<Arc<Console>>, RawQuery(raw): RawQuery) -> Response {
    let page = match page_of(&query(raw)) {
        Ok(page) => page,
        Err(reason) => return (StatusCode::BAD_REQUEST, reason).into_response(),
    };
    let changes = console.live.changes.clone();
    // Nothing sent yet (`last` None): the view goes at once; then after each change.
    let state = (console, page, changes, None::<String>);
    let stream = futures::stream::unfold(state, |(console, page, mut changes, last)| async move {
        loop {
            if last.is_some() {
                changes.changed().await.ok()?;
                tokio::time::sleep(SETTLE).await;
            }
            changes.borrow_and_update();
            let text = render(&console, &page).to_string();
            if last.as_deref() != Some(text.as_str()) {
                let event = SseEvent::default().event("view").data(text.clone());
                return Some((
                    Ok::<_, Infallible>(event),
                    (console, page, changes, Some(text)),
                ));
            }
        }
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

fn render(console: &Console, page: &Page) -> Value {
    let live = &console.live;
    let swarms = valid(live.swarms.state());
    let goals = valid(live.goals.state());
    let agents = valid(live.agents.state());
    let events: Vec<_> = live.events.state().iter().map(|e| (**e).clone()).collect();
    let trouble = live.trouble.lock().expect("not poisoned").clone();
    view::page(
        page,
        &Snapshot {
            swarms: &swarms,
            goals: &goals,
            agents: &agents,
            events: &events,
            trouble: trouble.as_deref(),
            now: jiff::Timestamp::now(),
        },
    )
}

/// The objects of a cache that parsed (a malformed one is left out, not fatal).
fn valid<K: Clone>(objects: Vec<Arc<crate::kubernetes::guard::Guarded<K>>>) -> Vec<K> {
    objects
        .iter()
        .filter_map(|o| o.0.as_ref().ok().cloned())
        .collect()
}

/// An agent's session as `overseer logs -f` shows it: its pod's last lines, then each
/// new one, as events (`line`), and why it ended (`end`).
async fn session(RawQuery(raw): RawQuery) -> Response {
    let (namespace, name) = match named(&query(raw)) {
        Ok(named) => named,
        Err(reason) => return (StatusCode::BAD_REQUEST, reason).into_response(),
    };
    // The last 500 lines, then each new one; the stream ends when the pod does.
    let events =
        match crate::commands::session::lines(Some(&namespace), &name, true, Some(500)).await {
            Ok(lines) => lines
                .map(|line| match line {
                    Ok(line) => SseEvent::default().event("line").data(line),
                    Err(error) => SseEvent::default().event("end").data(error.to_string()),
                })
                .chain(futures::stream::once(async {
                    SseEvent::default().event("end").data("the session ended")
                }))
                .boxed(),
            Err(error) => futures::stream::once(async move {
                SseEvent::default().event("end").data(error.to_string())
            })
            .boxed(),
        };
    let events = events.map(Ok::<_, Infallible>);
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// What the person may do in a namespace, as the API server answers for them.
async fn rights(State(console): State<Arc<Console>>, RawQuery(raw): RawQuery) -> Response {
    let query = query(raw);
    let Some(namespace) = query.get("namespace") else {
        return (StatusCode::BAD_REQUEST, "namespace is required").into_response();
    };
    let rights = actions::rights(&console.client, namespace).await;
    json_answer(StatusCode::OK, &rights)
}

/// One action, once per key: checked for the page's token, its origin and a JSON body.
async fn action(State(console): State<Arc<Console>>, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(reason) = same_page(&console, &headers) {
        return json_answer(
            StatusCode::FORBIDDEN,
            &json!({"error": reason, "causes": []}),
        );
    }
    let action: Action = match serde_json::from_slice(&body) {
        Ok(action) => action,
        Err(error) => {
            let reason = format!("the action is not understood: {error}");
            return json_answer(
                StatusCode::BAD_REQUEST,
                &json!({"error": reason, "causes": []}),
            );
        }
    };
    let cell = {
        let mut done = console.done.lock().expect("not poisoned");
        if done.len() >= REMEMBERED && !done.contains_key(action.key()) {
            done.clear();
        }
        done.entry(action.key().to_string()).or_default().clone()
    };
    let (status, answer) = cell
        .get_or_init(|| async {
            match actions::run(&console.client, &console.default_namespace, &action).await {
                Ok(answer) => (StatusCode::OK, answer),
                Err(answer) => (StatusCode::UNPROCESSABLE_ENTITY, answer),
            }
        })
        .await
        .clone();
    json_answer(status, &answer)
}

/// Whether `headers` come from the console's own page: its CSRF token, a JSON body,
/// and (when the browser says it) its own origin.
pub fn same_page(console: &Console, headers: &HeaderMap) -> Result<(), String> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let token = text("x-csrf-token").unwrap_or_default();
    if !equal_in_constant_time(token.as_bytes(), console.csrf.as_bytes()) {
        return Err(
            "this action did not come from the console's page (no valid CSRF token)".into(),
        );
    }
    if !text("content-type").is_some_and(|t| t.starts_with("application/json")) {
        return Err("an action's body is JSON".into());
    }
    if let Some(origin) = text("origin")
        && !console.is_own_origin(origin)
    {
        return Err(format!("an action from {origin} is not the console's"));
    }
    Ok(())
}

fn json_answer(status: StatusCode, value: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}
