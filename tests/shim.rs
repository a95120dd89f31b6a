//! The in-pod supervisor with real tmux and real child processes: scripted fake
//! agent CLIs (tests/fake-agents/) drive every activity state, and `overseer input`
//! delivers (or honestly refuses) messages over the shim's local socket.

#[path = "support/mod.rs"]
mod support;

use std::process::{Command, Output};
use std::time::Duration;

use overseer::agent::ActivityState;
use support::shim::{Shim, input};

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test]
async fn a_tui_agent_works_goes_idle_and_takes_typed_input_then_enter() {
    let shim = Shim::start("tui-idle", "tui", "custom", "tui-works-then-idles.sh", &[]);
    shim.wait_for(ActivityState::Working).await;
    let idle = shim.wait_for(ActivityState::Idle).await;
    assert!(
        idle.since <= idle.heartbeat_time,
        "idle since the output stopped"
    );

    let message = "overseer: continue with the failing test in src/lib.rs; run `overseer loop done` when finished";
    let delivered = shim.input(message);
    assert!(
        delivered.status.success(),
        "delivery refused: {}",
        stderr(&delivered)
    );
    // The line was submitted (Enter after the text): the agent read it whole.
    assert_eq!(shim.wait_for_log(message).await, format!("{message}\n"));
    shim.wait_for(ActivityState::Working).await;
    shim.wait_for(ActivityState::Idle).await;
}

#[tokio::test]
async fn a_delivery_retried_under_its_ids_is_confirmed_without_being_typed_twice() {
    let shim = Shim::start("tui-ids", "tui", "custom", "tui-works-then-idles.sh", &[]);
    shim.wait_for(ActivityState::Idle).await;
    let wake = "overseer: builder is idle";
    let ids = ["wake/builder/1", "wake/tester/1"];
    assert!(!shim.confirms(&ids[..1]), "nothing delivered yet");
    for _ in 0..2 {
        let delivered = shim.input_with_ids(wake, &ids);
        assert!(delivered.status.success(), "{}", stderr(&delivered));
        shim.wait_for(ActivityState::Idle).await;
    }
    assert_eq!(
        shim.wait_for_log(wake).await,
        format!("{wake}\n"),
        "typed once"
    );
    // Asking (as an operator does after a crash) types nothing.
    assert!(shim.confirms(&ids[1..]) && shim.confirms(&ids));
    assert!(!shim.confirms(&["wake/builder/1", "wake/builder/2"]));
    assert_eq!(
        shim.fake_log(),
        format!("{wake}\n"),
        "confirming typed nothing"
    );
    // A batch with one member not delivered yet is typed; so is a message with no ids.
    for (message, ids) in [("tester again", &ids[1..]), ("no ids", &[][..])] {
        let _ = shim.input_with_ids(message, ids);
        shim.wait_for(ActivityState::Idle).await;
    }
    let fresh = shim.input_with_ids("tester and more", &["wake/tester/1", "wake/tester/2"]);
    assert!(fresh.status.success(), "{}", stderr(&fresh));
    shim.wait_for(ActivityState::Idle).await;
    assert_eq!(
        shim.wait_for_log("tester and more").await,
        format!("{wake}\nno ids\ntester and more\n"),
        "the retried subset was skipped; the rest typed"
    );
}

#[tokio::test]
async fn a_permission_prompt_is_waiting_not_idle() {
    let shim = Shim::start("tui-permission", "tui", "claude", "tui-permission.sh", &[]);
    let waiting = shim.wait_for(ActivityState::Waiting).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let later = shim.activity().await.unwrap();
    assert_eq!(
        later.state,
        ActivityState::Waiting,
        "quiet at a prompt stays waiting"
    );
    assert_eq!(later.since, waiting.since);
}

#[tokio::test]
async fn typing_that_never_shows_is_refused_and_enter_is_not_sent() {
    let shim = Shim::start("tui-no-echo", "tui", "custom", "tui-no-echo.sh", &[]);
    shim.wait_for(ActivityState::Idle).await;
    let refused = shim.input("keep going");
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("did not show"),
        "{}",
        stderr(&refused)
    );
}

#[tokio::test]
async fn enter_is_sent_again_until_a_cli_that_was_not_ready_takes_the_input() {
    let shim = Shim::start(
        "tui-not-ready",
        "tui",
        "custom",
        "tui-enter-when-ready.sh",
        &[],
    );
    shim.wait_for(ActivityState::Idle).await;
    // The CLI becomes ready 2 s after the text is typed: the first Enter is lost.
    let ready = shim.dir.join("ready");
    let becomes_ready = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(2));
        std::fs::write(ready, "").unwrap();
    });
    let message = "overseer: continue with the failing test";
    let delivered = shim.input(message);
    becomes_ready.join().unwrap();
    assert!(
        delivered.status.success(),
        "delivery refused: {}",
        stderr(&delivered)
    );
    assert_eq!(
        shim.wait_for_log(message).await,
        format!("{message}\n"),
        "submitted once, whole"
    );
}

#[tokio::test]
async fn a_multi_line_message_to_a_line_editor_busy_with_its_first_lines_is_delivered_once() {
    let shim = Shim::start(
        "tui-multi-line",
        "tui",
        "custom",
        "tui-works-then-idles.sh",
        &[],
    );
    shim.wait_for(ActivityState::Idle).await;
    // Its lines are read as they are pasted; the CLI writes while the last one waits.
    let message =
        "[overseer] wake: 1 agent(s) stopped\n- agent=builder state=idle\nDecide for each.";
    let delivered = shim.input(message);
    assert!(delivered.status.success(), "{}", stderr(&delivered));
    assert_eq!(
        shim.wait_for_log("Decide for each.").await,
        format!("{message}\n"),
        "each line once"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        shim.fake_log(),
        format!("{message}\n"),
        "nothing typed again"
    );
}

#[tokio::test]
async fn input_a_cli_never_takes_is_a_failed_delivery_with_the_reason() {
    let shim = Shim::start(
        "tui-never-ready",
        "tui",
        "custom",
        "tui-enter-when-ready.sh",
        &[],
    );
    shim.wait_for(ActivityState::Idle).await;
    let refused = shim.input("overseer: keep going");
    assert!(!refused.status.success(), "a delivery the CLI never took");
    assert!(
        stderr(&refused).contains("did not take the input"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(shim.fake_log(), "", "nothing was submitted");
    // Delivered again once the CLI is ready: the text still in its box is submitted,
    // not typed a second time after itself.
    std::fs::write(shim.dir.join("ready"), "").unwrap();
    let delivered = shim.input("overseer: keep going");
    assert!(delivered.status.success(), "{}", stderr(&delivered));
    assert_eq!(
        shim.wait_for_log("keep going").await,
        "overseer: keep going\n",
        "submitted once, whole"
    );
}

#[tokio::test]
async fn an_exited_tui_reports_its_code_and_input_resumes_it() {
    let shim = Shim::start("tui-exits", "tui", "pi", "tui-exits.sh", &[]);
    let exited = shim.wait_for(ActivityState::Exited).await;
    assert_eq!(exited.exit_code, Some(4));
    let delivered = shim.input("continue where you stopped");
    assert!(delivered.status.success(), "{}", stderr(&delivered));
    assert_eq!(
        shim.wait_for_log("continue where you stopped").await,
        "args: \nargs: --continue\ncontinue where you stopped\n",
        "restarted with the resume flag, then the message typed"
    );
    let activity = shim.activity().await.unwrap();
    assert_ne!(activity.state, ActivityState::Exited);
    assert_eq!(activity.exit_code, None);
}

#[tokio::test]
async fn a_headless_agent_that_exits_early_is_resumed_with_the_message_as_prompt() {
    let shim = Shim::start("headless", "headless", "pi", "headless-exits-early.sh", &[]);
    let exited = shim.wait_for(ActivityState::Exited).await;
    assert_eq!(exited.exit_code, Some(0));
    let delivered = shim.input("continue: the API docs are missing");
    assert!(delivered.status.success(), "{}", stderr(&delivered));
    shim.wait_for(ActivityState::Exited).await;
    assert_eq!(
        shim.wait_for_log("the API docs are missing").await,
        "args: \nargs: --continue continue: the API docs are missing\n"
    );
}

#[tokio::test]
async fn a_headless_runs_token_usage_is_read_from_its_json_output_and_summed() {
    let shim = Shim::start(
        "headless-usage",
        "headless",
        "claude",
        "headless-claude-json.sh",
        &[],
    );
    let first = shim.wait_for(ActivityState::Exited).await;
    let usage = first.usage.expect("the first run's usage");
    assert_eq!(
        (usage.runs, usage.input_tokens, usage.cached_input_tokens),
        (1, 1_000, 800)
    );
    assert_eq!((usage.output_tokens, usage.total_tokens), (50, 1_050));
    assert_eq!(usage.cost_usd.as_deref(), Some("0.0125"));
    let delivered = shim.input("continue: the API docs are missing");
    assert!(delivered.status.success(), "{}", stderr(&delivered));
    shim.wait_for_log("--continue").await;
    let mut summed = None;
    for _ in 0..100 {
        let activity = shim.activity().await.unwrap();
        if activity.usage.as_ref().is_some_and(|u| u.runs == 2) {
            summed = activity.usage;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let summed = summed.expect("the second run's usage added");
    assert_eq!((summed.input_tokens, summed.total_tokens), (2_000, 2_100));
    assert_eq!(summed.cost_usd.as_deref(), Some("0.0250"));
}

#[tokio::test]
async fn input_during_a_headless_run_is_refused() {
    let shim = Shim::start(
        "headless-busy",
        "headless",
        "pi",
        "headless-exits-early.sh",
        &[("FAKE_RUN_SECONDS", "30")],
    );
    shim.wait_for(ActivityState::Working).await;
    let refused = shim.input("more");
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("a run is in progress"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(shim.fake_log(), "args: \n", "no second run");
}

#[tokio::test]
async fn input_without_a_shim_fails_with_the_reason() {
    let dir = std::env::temp_dir().join(format!("no-shim-{}", std::process::id()));
    let refused = input(&dir.join("input.sock"), "hello");
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("cannot reach the shim"),
        "{}",
        stderr(&refused)
    );
}

#[tokio::test]
async fn loop_done_without_an_agent_to_report_to_is_refused() {
    let shim = Shim::start(
        "loop-refused",
        "headless",
        "pi",
        "headless-exits-early.sh",
        &[],
    );
    shim.wait_for(ActivityState::Exited).await;
    let output = Command::new(env!("CARGO_BIN_EXE_overseer"))
        .args(["loop", "done", "--reason", "finished"])
        .arg("--socket")
        .arg(shim.socket())
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("OVERSEER_AGENT is not set"),
        "{}",
        stderr(&output)
    );
}

/// A swarm member's composed instructions `file` holding `text`, in a directory of
/// its own (`dir`), as the instructions ConfigMap is mounted in a pod.
fn instructions_source(dir: &str, file: &str, text: &str) -> std::path::PathBuf {
    let source_dir = Shim::workspace(dir);
    std::fs::create_dir_all(&source_dir).unwrap();
    let source = source_dir.join(file);
    std::fs::write(&source, text).unwrap();
    source
}

#[tokio::test]
async fn a_members_instructions_are_linked_into_its_workspace() {
    let source = instructions_source("layers", "CLAUDE.md", "# Instructions v1\n");
    let shim = Shim::start(
        "instructions",
        "tui",
        "claude",
        "tui-works-then-idles.sh",
        &[("OVERSEER_INSTRUCTIONS", source.to_str().unwrap())],
    );
    shim.wait_for(ActivityState::Idle).await;
    let linked = shim.dir.join("CLAUDE.md");
    assert_eq!(std::fs::read_link(&linked).unwrap(), source);
    // The ConfigMap volume is updated in place: the agent reads the new layers.
    std::fs::write(&source, "# Instructions v2\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(&linked).unwrap(),
        "# Instructions v2\n"
    );
}

#[tokio::test]
async fn instructions_that_cannot_be_linked_open_the_first_prompt() {
    let source = instructions_source("own-layers", "AGENTS.md", "# Swarm rules\n");
    // The repository has its own AGENTS.md: the shim leaves it as it is.
    let workspace = Shim::workspace("own-instructions");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join("AGENTS.md"), "# The repository's rules\n").unwrap();
    let shim = Shim::start(
        "own-instructions",
        "headless",
        "pi",
        "headless-exits-early.sh",
        &[
            ("OVERSEER_INSTRUCTIONS", source.to_str().unwrap()),
            ("OVERSEER_PROMPT", "Map the code."),
        ],
    );
    shim.wait_for(ActivityState::Exited).await;
    assert_eq!(
        std::fs::read_to_string(workspace.join("AGENTS.md")).unwrap(),
        "# The repository's rules\n"
    );
    assert_eq!(shim.fake_log(), "args: # Swarm rules\n\nMap the code.\n");
}

#[tokio::test]
async fn first_run_dialogs_are_answered_and_the_agent_reaches_its_prompt() {
    let shim = Shim::start("tui-first-run", "tui", "claude", "tui-first-run.sh", &[]);
    let log = shim.wait_for_log("first run done").await;
    assert!(!log.contains("declined"), "{log}");
    shim.wait_for(ActivityState::Idle).await;
    let delivered = shim.input("start on the parser");
    assert!(delivered.status.success(), "{}", stderr(&delivered));
    assert!(
        shim.wait_for_log("start on the parser")
            .await
            .ends_with("start on the parser\n")
    );
    // Claude Code's first-run state, seeded into the CLI's home before it started.
    let state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(shim.dir.join(".claude.json")).unwrap()).unwrap();
    let cwd = shim.dir.canonicalize().unwrap().display().to_string();
    assert_eq!(state["hasCompletedOnboarding"], true);
    assert_eq!(
        state["projects"][&cwd]["hasTrustDialogAccepted"], true,
        "{state}"
    );
}

#[tokio::test]
async fn a_question_quoted_above_the_prompt_area_is_not_waiting() {
    let shim = Shim::start(
        "tui-quotes",
        "tui",
        "claude",
        "tui-quotes-questions.sh",
        &[],
    );
    shim.wait_for(ActivityState::Idle).await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(shim.activity().await.unwrap().state, ActivityState::Idle);
}

#[tokio::test]
async fn a_dialog_the_model_writes_after_the_start_is_not_answered() {
    let shim = Shim::start(
        "tui-writes-dialog",
        "tui",
        "claude",
        "tui-writes-a-dialog.sh",
        &[],
    );
    shim.wait_for(ActivityState::Idle).await;
    let delivered = shim.input("summarise the repository");
    assert!(delivered.status.success(), "{}", stderr(&delivered));
    let log = shim.wait_for_log("after the reply").await;
    assert_eq!(
        log, "got summarise the repository\nno keys after the reply\n",
        "the shim answered a dialog the model wrote"
    );
}

#[tokio::test]
async fn input_over_a_permission_prompt_is_refused_and_nothing_is_typed() {
    let shim = Shim::start("tui-held", "tui", "claude", "tui-permission.sh", &[]);
    shim.wait_for(ActivityState::Waiting).await;
    for message in ["1", "continue: the overseer's direction"] {
        let refused = shim.input(message);
        assert!(
            !refused.status.success(),
            "typed over the prompt: {message}"
        );
        assert!(
            stderr(&refused).contains(overseer::shim::protocol::WAITS_ON_A_PERSON),
            "{}",
            stderr(&refused)
        );
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        shim.fake_log(),
        "",
        "the prompt got an answer nobody approved"
    );
    assert_eq!(shim.activity().await.unwrap().state, ActivityState::Waiting);
}

#[tokio::test]
async fn control_characters_in_a_message_never_reach_the_terminal() {
    let shim = Shim::start(
        "tui-controls",
        "tui",
        "custom",
        "tui-works-then-idles.sh",
        &[],
    );
    shim.wait_for(ActivityState::Idle).await;
    // Ctrl-C would interrupt the CLI, ESC [201~ end a bracketed paste, and CR submit.
    let delivered = shim.input("stop\x1b[201~\x03 now\x1b\x04");
    assert!(delivered.status.success(), "{}", stderr(&delivered));
    shim.wait_for(ActivityState::Idle).await;
    assert_eq!(shim.wait_for_log(" now").await, "stop[201~ now\n");
    let again = shim.input("still here");
    assert!(
        again.status.success(),
        "the CLI did not survive: {}",
        stderr(&again)
    );
    assert_eq!(
        shim.wait_for_log("still here").await,
        "stop[201~ now\nstill here\n"
    );
}

/// `overseer guard` as Claude Code runs it: the hook input on stdin, the verdict in its
/// exit code and stderr, each block counted by the real shim.
fn guard(
    policy: &std::path::Path,
    socket: &std::path::Path,
    tool: &str,
    input: serde_json::Value,
) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_overseer"))
        .args(["guard", "--runtime", "claude", "--policy"])
        .arg(policy)
        .arg("--socket")
        .arg(socket)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let hook_input = serde_json::json!({
        "session_id": "s", "cwd": "/workspace", "hook_event_name": "PreToolUse",
        "permission_mode": "bypassPermissions", "tool_name": tool, "tool_input": input
    });
    child
        .stdin
        .take()
        .unwrap()
        .write_all(hook_input.to_string().as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[tokio::test]
async fn the_guard_hook_blocks_with_exit_2_and_the_reason_and_the_shim_counts_each_block() {
    let shim = Shim::start("guard", "tui", "custom", "tui-works-then-idles.sh", &[]);
    shim.wait_for(ActivityState::Idle).await;
    let dir = Shim::workspace("guard-policy");
    std::fs::create_dir_all(&dir).unwrap();
    let policy = dir.join("policy.json");
    let rules = overseer::guard::policy(
        &overseer::kinds::guard::Guards::default(),
        "/workspace",
        &["main".into()],
    );
    std::fs::write(&policy, serde_json::to_string(&rules).unwrap()).unwrap();
    let socket = shim.socket();

    let pushed = guard(
        &policy,
        &socket,
        "Bash",
        serde_json::json!({"command": "git push -f origin main"}),
    );
    assert_eq!(pushed.status.code(), Some(2), "blocked");
    assert_eq!(
        stderr(&pushed).trim(),
        "overseer guard: a force push is not allowed for this agent"
    );
    let allowed = guard(
        &policy,
        &socket,
        "Write",
        serde_json::json!({"file_path": "src/lib.rs", "content": "x"}),
    );
    assert_eq!(allowed.status.code(), Some(0), "{}", stderr(&allowed));
    assert!(allowed.stderr.is_empty() && allowed.stdout.is_empty());
    let token = guard(
        &policy,
        &socket,
        "Read",
        serde_json::json!({"file_path": "/var/run/secrets/kubernetes.io/serviceaccount/token"}),
    );
    assert_eq!(token.status.code(), Some(2));

    let counts = shim.activity().await.unwrap().guards.expect("counted");
    assert_eq!(counts.blocked, 2, "the two blocks, not the allowed call");
    assert_eq!(
        counts.last_reason.as_deref(),
        Some("overseer guard: reading the ServiceAccount token is not allowed for this agent")
    );

    // A guard that cannot read its policy blocks, and says why.
    let lost = guard(
        &dir.join("absent.json"),
        &socket,
        "Bash",
        serde_json::json!({"command": "ls"}),
    );
    assert_eq!(lost.status.code(), Some(2));
    assert!(
        stderr(&lost).contains("cannot be read"),
        "{}",
        stderr(&lost)
    );
}
