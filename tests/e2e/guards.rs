//! Tool-call guards on the real Claude Code (TUI and headless), the real codex, the
//! real copilot (TUI) and the real pi against the model stand-in: the model asks for a
//! force push, a read of the ServiceAccount token and a write outside the workspace;
//! each is blocked by `overseer guard` as the CLI's own pre-tool hook (claude's and
//! codex's managed hooks, copilot's plugin hook, pi's extension), the model is told why, the blocks are counted in the agent's status
//! and the third opens an escalation. The same calls from an agent with its guards off
//! run, which shows what the guards stopped.

use model_standin::Last;
use overseer::agent::Agent;
use overseer::kinds::agent::{EscalationKind, EscalationState, ResourceUse};
use serde_json::json;

use crate::real_cli::CLI_WAIT;
use crate::real_cli::{
    HopsOnPanic, agent, agent_where, claude_runtime, codex_runtime, copilot_runtime, model,
    pi_runtime, print_hops, prompt, shell, text, tool_result, turn,
};
use crate::release::{install, namespace};
use crate::support::cluster::wait_in;

const FORCE_PUSH: &str = "git push --force origin feature 2>&1; echo push-ran";
const READ_TOKEN: &str =
    "test -r /var/run/secrets/kubernetes.io/serviceaccount/token && echo token-readable";
/// What each call prints when it runs.
const MARKERS: [&str; 3] = ["push-ran", "token-readable", "wrote-outside"];
const WRITE_OUTSIDE: &str = "echo probe > ~/outside-workspace && echo wrote-outside";

fn blocked(agent: &Agent) -> i64 {
    agent
        .status
        .as_ref()
        .and_then(|s| s.activity.as_ref())
        .and_then(|a| a.guards.as_ref())
        .map_or(0, |g| g.blocked)
}

/// The agent's reported resources, once a report carries them.
async fn escalated_resources(
    ns: &crate::support::cluster::TestNamespace,
    name: &str,
) -> ResourceUse {
    let agent = agent_where(ns, name, "a report with resources", |a| {
        a.status
            .as_ref()
            .and_then(|s| s.activity.as_ref())
            .is_some_and(|a| a.resources.is_some())
    })
    .await;
    agent.status.unwrap().activity.unwrap().resources.unwrap()
}

#[tokio::test]
#[ignore = "needs a real node: run by hack/e2e/run.sh (make test)"]
async fn the_real_clis_are_stopped_by_their_guards_in_tui_and_headless_mode() {
    let ns = namespace("guards").await;
    install(&ns).await;
    let guarded = |probe: &str| {
        vec![
            turn(prompt(probe), shell(FORCE_PUSH)),
            turn(
                tool_result("overseer guard: a force push"),
                shell(READ_TOKEN),
            ),
            turn(
                tool_result("overseer guard: reading the ServiceAccount token"),
                shell(WRITE_OUTSIDE),
            ),
            turn(
                tool_result("overseer guard: writing ~/outside-workspace"),
                text("All three calls were blocked."),
            ),
        ]
    };
    let mut turns = guarded("Guard probe headless");
    turns.extend(guarded("Guard probe tui"));
    turns.extend(guarded("Guard probe codex"));
    turns.extend(guarded("Guard probe copilot"));
    turns.extend(guarded("Guard probe pi"));
    turns.extend([
        turn(prompt("Guard probe off"), shell(FORCE_PUSH)),
        turn(tool_result("push-ran"), shell(READ_TOKEN)),
        turn(tool_result("token-readable"), shell(WRITE_OUTSIDE)),
        turn(tool_result("wrote-outside"), text("All three calls ran.")),
    ]);
    let server = model(&ns, turns).await;
    let _hops = HopsOnPanic(&ns, &server);
    let (pi, pi_template) = pi_runtime(&ns, &server, "headless").await;
    agent(
        &ns,
        "pi",
        json!({"runtime": pi, "prompt": "Guard probe pi", "podTemplate": pi_template}),
    )
    .await;
    for (name, runtime, probe, guards) in [
        (
            "headless",
            claude_runtime("headless"),
            "Guard probe headless",
            json!({}),
        ),
        ("tui", claude_runtime("tui"), "Guard probe tui", json!({})),
        (
            "codex",
            codex_runtime(&server, "headless"),
            "Guard probe codex",
            json!({}),
        ),
        (
            "copilot",
            copilot_runtime("tui"),
            "Guard probe copilot",
            json!({}),
        ),
        (
            "unguarded",
            claude_runtime("headless"),
            "Guard probe off",
            json!({"enabled": false}),
        ),
    ] {
        agent(
            &ns,
            name,
            json!({"runtime": runtime, "prompt": probe, "guards": guards}),
        )
        .await;
    }

    let guarded = ["headless", "tui", "codex", "copilot", "pi"];
    for name in guarded {
        let escalated = agent_where(&ns, name, "three blocks and an escalation", |a| {
            blocked(a) >= 3
                && a.status.as_ref().is_some_and(|s| {
                    s.escalations.iter().any(|e| {
                        e.kind == EscalationKind::Guarded && e.state == EscalationState::Open
                    })
                })
        })
        .await;
        let status = escalated.status.unwrap();
        let counts = status.activity.unwrap().guards.unwrap();
        assert_eq!(counts.blocked, 3, "{name}: each call blocked once");
        assert!(
            counts
                .last_reason
                .as_deref()
                .is_some_and(|r| r.contains("writing ~/outside-workspace is not allowed")),
            "{name}: {counts:?}"
        );
        let guarded: Vec<_> = status
            .escalations
            .iter()
            .filter(|e| e.kind == EscalationKind::Guarded)
            .collect();
        assert_eq!(guarded.len(), 1, "{name}: one escalation for the attempt");
        // The same reports carry the container's use from its cgroup.
        let resources = escalated_resources(&ns, name).await;
        assert!(resources.memory_bytes > 0, "{name}: {resources:?}");
    }
    // Each reason reached the model as the blocked call's result (a CLI sends it just
    // after its hook has counted the block), and nothing ran.
    let reasons = [
        "overseer guard: a force push is not allowed for this agent",
        "overseer guard: reading the ServiceAccount token is not allowed for this agent",
        "overseer guard: writing ~/outside-workspace is not allowed",
    ];
    let results = wait_in(
        &ns,
        "every reason told to each guarded CLI",
        CLI_WAIT,
        || async {
            let results: Vec<String> = server
                .exchanges()
                .into_iter()
                .filter_map(|e| match e.last {
                    Last::ToolResult(t) => Some(t),
                    _ => None,
                })
                .collect();
            let told = |reason: &str| results.iter().filter(|r| r.contains(reason)).count();
            reasons
                .iter()
                .all(|r| told(r) >= guarded.len())
                .then_some(results)
        },
    )
    .await;
    for reason in reasons {
        let told = results.iter().filter(|r| r.contains(reason)).count();
        assert_eq!(
            told,
            guarded.len(),
            "told to each guarded CLI once: {reason}"
        );
    }
    for ran in MARKERS {
        // codex's block quotes the command, which names the marker: not a run.
        let seen = results
            .iter()
            .filter(|r| r.contains(ran) && !r.contains("overseer guard:"))
            .count();
        assert_eq!(seen, 1, "{ran}: only the unguarded agent's call ran");
    }
    let unguarded = agent_where(&ns, "unguarded", "its calls run", |a| {
        a.status.as_ref().is_some_and(|s| s.activity.is_some())
    })
    .await;
    assert_eq!(
        blocked(&unguarded),
        0,
        "nothing blocked with the guards off"
    );
    print_hops(&ns, &server);
}
