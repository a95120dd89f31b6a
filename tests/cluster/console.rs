//! The console in a real browser (Debian's headless chromium through chromedriver)
//! against the local control plane: `overseer ui` runs as a person would run it, with
//! the kubeconfig of an admin and then of a user who may only read. No operator runs:
//! the test writes the objects and their status itself, so what the page shows is the
//! console's doing alone.

use std::time::Duration;

use kube::Api;
use overseer::agent::Agent;
use overseer::goal::Goal;
use serde_json::json;

use crate::support::browser::{Browser, Console, screenshot_path};
use crate::support::cluster::{
    TestNamespace, create_agent, create_simple_goal, kubectl, setup, wait_in,
};

/// What on the page a screen reader could not name: a field without a label, a table
/// without a caption, a button or link without text.
async fn unnamed(browser: &Browser) -> serde_json::Value {
    browser
        .run(
            r#"const out = [];
               for (const f of document.querySelectorAll('textarea, input'))
                 if (!(f.id && document.querySelector(`label[for="${f.id}"]`)) && !f.getAttribute('aria-label')) out.push(f.outerHTML);
               for (const t of document.querySelectorAll('table'))
                 if (!t.querySelector('caption')) out.push('table without a caption');
               for (const b of document.querySelectorAll('button, a'))
                 if (!b.textContent.trim() && !b.getAttribute('aria-label')) out.push(b.outerHTML);
               return out;"#,
            json!([]),
        )
        .await
}

fn apply(ns: &TestNamespace, object: &serde_json::Value) {
    let applied = kubectl(&["-n", &ns.name, "apply", "-f", "-"], &object.to_string());
    assert!(applied.status.success(), "{applied:?}");
}

/// Posts an action from the page itself (its CSRF token, its origin), twice at once
/// with one key when `twice`; the answers.
async fn post_from_page(
    browser: &Browser,
    action: serde_json::Value,
    twice: bool,
) -> Vec<serde_json::Value> {
    let answers = browser
        .run(
            r#"const [action, twice] = [arguments[0], arguments[1]];
               const csrf = document.querySelector('meta[name="csrf-token"]').content;
               const post = () => fetch('/api/action', {method: 'POST',
                   headers: {'content-type': 'application/json', 'x-csrf-token': csrf},
                   body: JSON.stringify(action)}).then(r => r.json());
               return Promise.all(twice ? [post(), post()] : [post()]);"#,
            json!([action, twice]),
        )
        .await;
    answers.as_array().expect("the answers").clone()
}

async fn inbox_texts(ns: &TestNamespace, agent: &str) -> Vec<(i64, String)> {
    let agents: Api<Agent> = ns.api();
    let status = agents.get(agent).await.unwrap().status.unwrap_or_default();
    status
        .inbox
        .iter()
        .map(|m| (m.seq, m.text.clone()))
        .collect()
}

#[tokio::test]
#[ignore = "needs the test cluster and chromium: run by `make test`"]
async fn the_console_shows_runs_live_sends_once_and_leaves_a_viewer_only_reading() {
    let ns = setup("console").await;
    apply(
        &ns,
        &json!({"apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm",
                "metadata": {"name": "team"},
                "spec": {"defaults": {"runtime": {"name": "pi", "image": "example.com/pi:1"}},
                         "agents": [{"name": "builder", "role": "builder", "prompt": "Build it."}]}}),
    );
    create_agent(&ns, "team-builder", json!({"swarm": "team"})).await;
    // What its shim and the operator would have written: activity, and an Event.
    let status = json!({"status": {"phase": "Running", "attempt": 1, "activity": {
        "state": "working", "attempt": 1, "since": "2026-12-07T10:00:00Z",
        "summary": "adding proration to the invoice totals"}}});
    let patched = kubectl(
        &[
            "-n",
            &ns.name,
            "patch",
            "agent",
            "team-builder",
            "--subresource=status",
            "--type=merge",
            "-p",
            &status.to_string(),
        ],
        "",
    );
    assert!(patched.status.success(), "{patched:?}");
    apply(
        &ns,
        &json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "team.escalated"},
                "involvedObject": {"apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm",
                                   "name": "team", "namespace": ns.name},
                "reason": "MemberStarted", "message": "team-builder started (attempt 1)",
                "type": "Normal", "lastTimestamp": "2026-12-07T10:00:00Z", "count": 1,
                "source": {"component": "overseer"}}),
    );
    create_simple_goal(&ns, "ship", &["build", "test"]).await;
    let progress = json!({"status": {"phase": "Running", "completedSteps": 1, "steps": [
        {"name": "build", "phase": "Succeeded", "attempts": 1, "startedAt": "2026-12-07T10:00:00Z",
         "finishedAt": "2026-12-07T10:02:05Z", "result": "built in 2m, 0 warnings"},
        {"name": "test", "phase": "Running", "attempts": 2, "startedAt": "2026-12-07T10:03:00Z",
         "message": "retrying after a failure"}]}});
    let patched = kubectl(
        &[
            "-n",
            &ns.name,
            "patch",
            "goal",
            "ship",
            "--subresource=status",
            "--type=merge",
            "-p",
            &progress.to_string(),
        ],
        "",
    );
    assert!(patched.status.success(), "{patched:?}");
    let console = Console::start(&ns, None).await;
    let browser = Browser::start().await;

    // The runs list shows the swarm applied with kubectl, and its goal.
    browser.goto(&console.url).await;
    browser.wait_for_text("team", Duration::from_secs(10)).await;
    browser.wait_for_text("ship", Duration::from_secs(10)).await;
    // A change of state appears without a reload, within 2 s of the API server having it.
    browser.run("window.notReloaded = true;", json!([])).await;
    let ready = json!({"status": {"conditions": [{"type": "Ready", "status": "True",
        "reason": "MembersReady", "message": "every member runs",
        "lastTransitionTime": "2026-12-07T10:00:00Z"}]}});
    let patched = kubectl(
        &[
            "-n",
            &ns.name,
            "patch",
            "swarm",
            "team",
            "--subresource=status",
            "--type=merge",
            "-p",
            &ready.to_string(),
        ],
        "",
    );
    assert!(patched.status.success(), "{patched:?}");
    let took = browser.wait_for_text("Ready", Duration::from_secs(2)).await;
    println!(
        "console[{}]: a state change shown {took:?} after the API server had it",
        ns.name
    );
    assert_eq!(
        browser
            .run("return window.notReloaded === true;", json!([]))
            .await,
        json!(true),
        "the page was not reloaded"
    );
    browser.screenshot(&screenshot_path("runs")).await;

    // A swarm's page: its members and its goals.
    browser
        .goto(&format!("{}#/swarm/{}/team", console.url, ns.name))
        .await;
    browser
        .wait_for_text("team-builder", Duration::from_secs(10))
        .await;
    browser.screenshot(&screenshot_path("swarm")).await;

    // An agent's page: a message sent with a double click lands once.
    browser
        .goto(&format!("{}#/agent/{}/team-builder", console.url, ns.name))
        .await;
    browser
        .wait_for_text("Message to team-builder", Duration::from_secs(10))
        .await;
    browser
        .type_into("#message", "hello from the console")
        .await;
    browser
        .run(
            "const b = document.querySelector('form button[type=submit]'); b.click(); b.click();",
            json!([]),
        )
        .await;
    browser
        .wait_for_text("queued for team-builder", Duration::from_secs(10))
        .await;
    // The same action posted twice at once (a retry, a second tab) is done once.
    let answers = post_from_page(
        &browser,
        json!({"key": "k-1", "action": "send", "namespace": ns.name, "name": "team-builder",
               "text": "posted twice"}),
        true,
    )
    .await;
    assert_eq!(
        answers[0], answers[1],
        "one answer for one key: {answers:?}"
    );
    let inbox = wait_in(
        &ns,
        "both messages in the inbox",
        Duration::from_secs(10),
        || async {
            let inbox = inbox_texts(&ns, "team-builder").await;
            (inbox.len() >= 2).then_some(inbox)
        },
    )
    .await;
    let texts: Vec<&str> = inbox.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(
        texts,
        ["hello from the console", "posted twice"],
        "each exactly once"
    );
    assert_eq!(answers[0]["seq"], json!(inbox[1].0));
    // The page follows the message's delivery state.
    browser
        .wait_for_text("posted twice", Duration::from_secs(5))
        .await;
    assert!(browser.text().await.contains("queued"));
    browser.screenshot(&screenshot_path("agent")).await;

    // A goal's page: pause it.
    browser
        .goto(&format!("{}#/goal/{}/ship", console.url, ns.name))
        .await;
    browser
        .wait_for_text("Goal ship", Duration::from_secs(10))
        .await;
    browser
        .wait_for_text("Pause", Duration::from_secs(10))
        .await;
    browser
        .click("div[aria-label='Pause or resume'] button")
        .await;
    browser
        .wait_for_text("Paused by a person", Duration::from_secs(5))
        .await;
    let goals: Api<Goal> = ns.api();
    assert!(goals.get("ship").await.unwrap().spec.paused);
    browser.screenshot(&screenshot_path("goal")).await;

    // New run: a field the schema refuses shows the API server's message; nothing made.
    browser.goto(&format!("{}#/new", console.url)).await;
    browser
        .wait_for_text("New run", Duration::from_secs(10))
        .await;
    let bad = "apiVersion: overseer.dev/v1alpha1\nkind: Goal\nmetadata:\n  name: bad\nspec:\n  maxParallel: 0\n  steps:\n    - name: build\n      action: Build it.\n";
    browser.type_into("#yaml", bad).await;
    browser.click("form[aria-label='New run'] button").await;
    browser
        .wait_for_text("spec.maxParallel", Duration::from_secs(10))
        .await;
    browser.screenshot(&screenshot_path("new")).await;
    assert_eq!(
        unnamed(&browser).await,
        json!([]),
        "everything on New run is named"
    );
    assert!(
        goals.get_opt("bad").await.unwrap().is_none(),
        "nothing was created"
    );

    // A user who may only read sees everything, may send nothing, and is told why.
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "console-viewer"},
        "rules": [{"apiGroups": ["overseer.dev"], "resources": ["swarms", "goals", "agents"],
                   "verbs": ["get", "list", "watch"]},
                  {"apiGroups": [""], "resources": ["events"], "verbs": ["get", "list", "watch"]}]});
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "console-viewer"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "console-viewer"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "console-viewer"}]});
    apply(&ns, &role);
    apply(&ns, &binding);
    let viewer = Console::start(&ns, Some("console-viewer")).await;
    browser.goto(&viewer.url).await;
    browser.wait_for_text("team", Duration::from_secs(10)).await;
    browser
        .goto(&format!("{}#/agent/{}/team-builder", viewer.url, ns.name))
        .await;
    browser
        .wait_for_text("You may not send to agents in", Duration::from_secs(10))
        .await;
    let disabled = browser
        .run(
            "return document.querySelector('form button[type=submit]').disabled;",
            json!([]),
        )
        .await;
    assert_eq!(disabled, json!(true), "the viewer's Send is disabled");
    // Posted anyway, the API server refuses it, and its answer is shown as such.
    let refused = post_from_page(
        &browser,
        json!({"key": "k-2", "action": "send", "namespace": ns.name, "name": "team-builder",
               "text": "from a viewer"}),
        false,
    )
    .await;
    let error = refused[0]["error"].as_str().unwrap_or_default().to_string();
    assert!(
        error.contains("not allowed to send to team-builder") && error.contains("forbidden"),
        "{refused:?}"
    );
    assert_eq!(
        inbox_texts(&ns, "team-builder").await.len(),
        2,
        "nothing more queued"
    );
}
