//! The real agent CLIs in real containers: Claude Code, codex, Copilot and pi from the
//! npm registry (hack/image/real-clis.env), in the agent images of hack/image/build.sh, driven by
//! the operator and the shim, against the model stand-in (tests/model-standin) that
//! this test process serves on an address the pods reach. The stand-in answers each
//! request from the test's scenario and records it: what a CLI sent is read there.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kube::api::Api;
use model_standin::{Exchange, Last, Reply, Scenario, Server, Turn, Usage, When};
use overseer::agent::{ActivityState, Agent, AgentPhase};
use overseer::goal::{Goal, GoalPhase, StepPhase};
use serde_json::json;

use crate::release::{address_for_pods, create, exec, install, namespace};
use crate::support::cluster::{TestNamespace, create_object, wait_in};
use crate::support::git_server::GitServer;

/// How long a real CLI may take from its pod's creation to a finished exchange.
pub(crate) const CLI_WAIT: Duration = Duration::from_secs(180);
pub(crate) const OVERSEER: &str = "/overseer/bin/overseer";

fn image(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: run the e2e suite through hack/e2e/run.sh (make test)")
    })
}

fn claude_image() -> String {
    image("OVERSEER_E2E_CLAUDE_IMAGE")
}

fn codex_image() -> String {
    image("OVERSEER_E2E_CODEX_IMAGE")
}

fn copilot_image() -> String {
    image("OVERSEER_E2E_COPILOT_IMAGE")
}

fn pi_image() -> String {
    image("OVERSEER_E2E_PI_IMAGE")
}

pub(crate) fn turn(when: When, reply: Reply) -> Turn {
    Turn {
        when,
        reply,
        times: 1,
        usage: Usage::default(),
    }
}

pub(crate) fn prompt(text: &str) -> When {
    When::Prompt(text.into())
}

pub(crate) fn tool_result(text: &str) -> When {
    When::ToolResult(text.into())
}

pub(crate) fn text(text: &str) -> Reply {
    Reply::Text(text.into())
}

pub(crate) fn shell(command: &str) -> Reply {
    Reply::Shell(command.into())
}

/// The stand-in, serving `turns` on an address the namespace's pods reach, and the
/// Secret `model` that points the CLIs at it: `ANTHROPIC_BASE_URL`, Copilot's own model
/// provider (its "bring your own model" mode, Anthropic's API, no GitHub sign-in) and the
/// API keys. pi's provider is a file: see `pi_runtime`.
pub(crate) async fn model(ns: &TestNamespace, turns: Vec<Turn>) -> Server {
    let address = address_for_pods(ns).await;
    let server = Server::start((address, 0).into(), Scenario { turns })
        .await
        .expect("the model stand-in's port");
    create::<Secret>(
        ns,
        &format!(
            "{{apiVersion: v1, kind: Secret, metadata: {{name: model}},
              stringData: {{ANTHROPIC_BASE_URL: '{url}', ANTHROPIC_API_KEY: sk-ant-standin-0123456789abcdefghij,
                            OPENAI_API_KEY: sk-standin-0123456789,
                            COPILOT_PROVIDER_BASE_URL: '{url}', COPILOT_PROVIDER_TYPE: anthropic,
                            COPILOT_PROVIDER_API_KEY: sk-ant-standin-0123456789abcdefghij,
                            COPILOT_OFFLINE: 'true'}}}}",
            url = server.url
        ),
    )
    .await;
    println!("e2e[{}]: model stand-in at {}", ns.name, server.url);
    server
}

/// The model codex is told to use: requests for it offer the shell as a plain function
/// tool (`exec_command`), which the stand-in calls. codex 0.171's default model gets its
/// tools nested in a JavaScript "code mode" namespace that the stand-in does not speak.
const CODEX_MODEL: &str = "gpt-5.5-codex";

/// codex's runtime: the model above, and a model provider given on the command line
/// (`-c`) that points it at the stand-in, whose key is the pod's `OPENAI_API_KEY`.
pub(crate) fn codex_runtime(server: &Server, mode: &str) -> serde_json::Value {
    let provider = format!(
        "model_providers.standin={{name=\"Stand-in\", base_url=\"{}/v1\", env_key=\"OPENAI_API_KEY\", wire_api=\"responses\"}}",
        server.url
    );
    json!({"name": "codex", "mode": mode, "image": codex_image(), "model": CODEX_MODEL,
           "args": ["-c", "model_provider=\"standin\"", "-c", provider]})
}

pub(crate) fn claude_runtime(mode: &str) -> serde_json::Value {
    json!({"name": "claude", "mode": mode, "image": claude_image()})
}

/// Copilot's runtime: its provider comes from the `model` Secret's environment.
pub(crate) fn copilot_runtime(mode: &str) -> serde_json::Value {
    json!({"name": "copilot", "mode": mode, "image": copilot_image(), "model": "claude-standin"})
}

/// pi's runtime, and the pod template that gives it its provider: pi reads providers from
/// `~/.pi/agent/models.json` only, mounted here from the ConfigMap `pi-models` (created
/// here, pointing at `server`) into the directory the agent image makes the agent
/// user's (so pi still writes its sessions).
pub(crate) async fn pi_runtime(
    ns: &TestNamespace,
    server: &Server,
    mode: &str,
) -> (serde_json::Value, serde_json::Value) {
    let models = json!({"providers": {"standin": {
        "baseUrl": server.url, "api": "anthropic-messages", "apiKey": "ANTHROPIC_API_KEY",
        "models": [{"id": "claude-standin"}]}}});
    create_object::<ConfigMap>(
        ns,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pi-models"},
               "data": {"models.json": models.to_string()}}),
    )
    .await;
    (
        json!({"name": "pi", "mode": mode, "image": pi_image(), "model": "standin/claude-standin"}),
        json!({"volumes": [{"name": "pi-models", "configMap": {"name": "pi-models"}}],
               "volumeMounts": [{"name": "pi-models", "mountPath": "/home/agent/.pi/agent/models.json",
                                 "subPath": "models.json", "readOnly": true}]}),
    )
}

/// Creates Agent `name` with `spec`; its pods take the stand-in's Secret.
pub(crate) async fn agent(ns: &TestNamespace, name: &str, mut spec: serde_json::Value) {
    let template = spec
        .as_object_mut()
        .unwrap()
        .entry("podTemplate")
        .or_insert(json!({}));
    template["envFrom"] = json!([{"secretRef": {"name": "model"}}]);
    create_object::<Agent>(
        ns,
        json!({"apiVersion": "overseer.dev/v1alpha1", "kind": "Agent",
               "metadata": {"name": name}, "spec": spec}),
    )
    .await;
}

/// The agent-loop requests whose last message is a user text holding `needle`.
pub(crate) fn prompts_with<'a>(exchanges: &'a [Exchange], needle: &str) -> Vec<&'a Exchange> {
    exchanges
        .iter()
        .filter(|e| e.agent_loop && matches!(&e.last, Last::UserText(t) if t.contains(needle)))
        .collect()
}

/// Prints each exchange of the agent loop, the hops the closing note quotes.
pub(crate) fn print_hops(ns: &TestNamespace, server: &Server) {
    for e in server.exchanges().iter().filter(|e| e.agent_loop) {
        let last = match &e.last {
            Last::UserText(t) => format!("user: {}", last_line(t)),
            Last::ToolResult(t) => format!("tool result: {}", last_line(t)),
            Last::Other => "other".into(),
        };
        let reply = match &e.reply {
            Reply::Text(t) => format!("text {t:?}"),
            Reply::Shell(c) => format!("shell {c:?}"),
            Reply::ShellAskingApproval(c) => format!("shell asking approval {c:?}"),
        };
        println!(
            "e2e[{}]: model {:?} {} <- {last} -> {reply}",
            ns.name, e.api, e.model
        );
    }
}

/// Prints the stand-in's exchanges when the test fails: what each CLI was sent and
/// answered is the first thing to read on a real CLI's failure.
pub(crate) struct HopsOnPanic<'a>(pub(crate) &'a TestNamespace, pub(crate) &'a Server);

impl Drop for HopsOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            print_hops(self.0, self.1);
        }
    }
}

fn last_line(text: &str) -> String {
    let line = text.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
    line.chars().take(120).collect()
}

pub(crate) async fn agent_where(
    ns: &TestNamespace,
    name: &str,
    what: &str,
    wanted: impl Fn(&Agent) -> bool,
) -> Agent {
    let agents: Api<Agent> = ns.api();
    wait_in(ns, what, CLI_WAIT, || {
        let agents = agents.clone();
        let wanted = &wanted;
        async move {
            let agent = agents.get(name).await.ok()?;
            wanted(&agent).then_some(agent)
        }
    })
    .await
}

pub(crate) fn phase(agent: &Agent) -> Option<AgentPhase> {
    agent.status.as_ref()?.phase
}

fn activity(agent: &Agent) -> Option<ActivityState> {
    Some(agent.status.as_ref()?.activity.as_ref()?.state)
}

/// Prints, under `label`, the seconds from `pod`'s start to the stand-in's first
/// agent-loop request holding `needle` (the first prompt accepted): the closing notes'
/// per-runtime figure.
async fn print_start_to_prompt(
    ns: &TestNamespace,
    label: &str,
    pod: &str,
    server: &Server,
    needle: &str,
) {
    let pods: Api<Pod> = ns.api();
    let started = pods
        .get(pod)
        .await
        .unwrap()
        .status
        .and_then(|s| s.start_time)
        .expect("the pod's start time")
        .0
        .as_millisecond();
    let exchanges = server.exchanges();
    let first = prompts_with(&exchanges, needle)
        .first()
        .map(|e| e.received_ms as i64)
        .expect("the first prompt reached the model");
    let seconds = (first - started) as f64 / 1000.0;
    println!(
        "e2e[{}]: {label}: pod start -> first prompt at the model {seconds:.1}s",
        ns.name
    );
}

/// Creates Agent `careful`: `runtime` supervised (`unattended: false`), prompted to
/// touch /workspace/made-without-asking, in the loop with nudges on (a nudge typed over
/// the CLI's question would answer it).
async fn careful_agent(ns: &TestNamespace, mut runtime: serde_json::Value) {
    runtime["unattended"] = json!(false);
    agent(
        ns,
        "careful",
        json!({"runtime": runtime, "prompt": "Touch the marker",
               "loop": {"enabled": true, "interval": "1s", "idleAfter": "3s", "cooldown": "1s",
                        "autoNudgeWithoutOverseer": true}}),
    )
    .await;
}

/// `careful`'s CLI asked before it ran the command and nobody answered: Waiting, and
/// still 10 s later; never nudged; the command's result (scripted turn `result_turn`)
/// never went back to the model; the file was never made.
async fn assert_left_to_a_person(ns: &TestNamespace, server: &Server, result_turn: usize) {
    let waiting = agent_where(ns, "careful", "careful waiting for a person", |a| {
        activity(a) == Some(ActivityState::Waiting)
    })
    .await;
    assert_eq!(phase(&waiting), Some(AgentPhase::Running));
    let nudges = |a: &Agent| {
        a.status
            .as_ref()
            .and_then(|s| s.loop_.as_ref())
            .map_or(0, |l| l.nudges)
    };
    let nudged_before = nudges(&waiting);
    tokio::time::sleep(Duration::from_secs(10)).await;
    let agents: Api<Agent> = ns.api();
    let careful = agents.get("careful").await.unwrap();
    assert_eq!(
        activity(&careful),
        Some(ActivityState::Waiting),
        "still waiting 10 s later"
    );
    assert_eq!(
        (nudged_before, nudges(&careful)),
        (0, 0),
        "no nudge, before the prompt showed (its first prompt was being typed) or over it"
    );
    let exchanges = server.exchanges();
    assert!(
        !prompts_with(&exchanges, "Touch the marker").is_empty(),
        "the prompt reached the model"
    );
    assert_eq!(
        server.unused_turns(),
        vec![result_turn],
        "the command's result never went back to the model"
    );
    let made = exec(ns, "careful-1", &["ls", "/workspace/made-without-asking"]);
    assert!(!made.status.success(), "the command did not run");
}

#[tokio::test]
#[ignore = "needs a real node: run by hack/e2e/run.sh (make test)"]
async fn headless_claude_and_codex_report_the_models_text_and_usage() {
    let ns = namespace("real-headless").await;
    install(&ns).await;
    let big = |input_tokens, output_tokens| Usage {
        input_tokens,
        output_tokens,
    };
    let server = model(
        &ns,
        vec![
            // The Goal's step: a tool call, then the text that is the step's result.
            turn(
                prompt("Survey the billing module"),
                shell("echo survey-marker-$((6*7))"),
            ),
            turn(
                tool_result("survey-marker-42"),
                text("Billing has three parts: invoices, proration, refunds."),
            ),
            // A headless claude Agent, two model calls.
            Turn {
                usage: big(1_000, 200),
                ..turn(
                    prompt("Count the claude modules"),
                    shell("echo claude-counted"),
                )
            },
            Turn {
                usage: big(1_500, 300),
                ..turn(tool_result("claude-counted"), text("There are 7 modules."))
            },
            // A headless codex Agent, two model calls.
            Turn {
                usage: big(2_000, 400),
                ..turn(
                    prompt("Count the codex modules"),
                    shell("echo codex-counted"),
                )
            },
            Turn {
                usage: big(2_500, 500),
                ..turn(tool_result("codex-counted"), text("There are 9 modules."))
            },
        ],
    )
    .await;
    let _hops = HopsOnPanic(&ns, &server);
    let claude = claude_image();
    let started = Instant::now();
    create::<Goal>(
        &ns,
        &format!(
            "{{apiVersion: overseer.dev/v1alpha1, kind: Goal, metadata: {{name: survey}},
              spec: {{defaults: {{runtime: {{name: claude, image: '{claude}'}}, maxRetries: 0}},
                      podTemplate: {{envFrom: [{{secretRef: {{name: model}}}}]}},
                      steps: [{{name: survey, action: 'Survey the billing module'}}]}}}}"
        ),
    )
    .await;
    agent(
        &ns,
        "counter-claude",
        json!({"runtime": claude_runtime("headless"), "prompt": "Count the claude modules",
               "loop": {"enabled": false}}),
    )
    .await;
    agent(
        &ns,
        "counter-codex",
        json!({"runtime": codex_runtime(&server, "headless"), "prompt": "Count the codex modules",
               "loop": {"enabled": false}}),
    )
    .await;

    let goals: Api<Goal> = ns.api();
    let goal = wait_in(&ns, "the goal Succeeded", CLI_WAIT, || {
        let goals = goals.clone();
        async move {
            let goal = goals.get("survey").await.ok()?;
            let phase = goal.status.as_ref()?.phase?;
            (phase == GoalPhase::Succeeded || phase == GoalPhase::Paused).then_some(goal)
        }
    })
    .await;
    let status = goal.status.unwrap();
    let step = &status.steps[0];
    assert_eq!(status.phase, Some(GoalPhase::Succeeded), "{step:?}");
    assert_eq!(step.phase, StepPhase::Succeeded);
    assert_eq!(
        step.result.as_deref(),
        Some("Billing has three parts: invoices, proration, refunds."),
        "the step's result is the model's last text"
    );
    println!(
        "e2e[{}]: goal step (real claude --print) Succeeded in {:.1}s, result {:?}",
        ns.name,
        started.elapsed().as_secs_f64(),
        step.result
    );

    // Each headless Agent's attempt sums what the stand-in sent for its conversation.
    for (name, input, output) in [
        ("counter-claude", 2_500, 500),
        ("counter-codex", 4_500, 900),
    ] {
        let agent = agent_where(&ns, name, &format!("{name}'s run ended"), |a| {
            let activity = a.status.as_ref().and_then(|s| s.activity.as_ref());
            activity.is_some_and(|a| a.state == ActivityState::Exited && a.usage.is_some())
        })
        .await;
        let activity = agent.status.unwrap().activity.unwrap();
        let usage = activity.usage.unwrap();
        assert_eq!(activity.exit_code, Some(0), "{name}");
        assert_eq!(
            (usage.runs, usage.input_tokens, usage.output_tokens),
            (1, input, output),
            "{name}: the attempt's usage is what the model stand-in sent"
        );
        println!(
            "e2e[{}]: {name}: usage {} in / {} out over {} run(s), as the stand-in sent",
            ns.name, usage.input_tokens, usage.output_tokens, usage.runs
        );
    }
    assert!(
        server.unused_turns().is_empty(),
        "every scripted turn was used: {:?}",
        server.unused_turns()
    );
    print_hops(&ns, &server);
}

#[tokio::test]
#[ignore = "needs a real node: run by hack/e2e/run.sh (make test)"]
async fn the_real_claude_tui_is_nudged_to_done_and_a_permission_prompt_waits_for_a_person() {
    let ns = namespace("real-loop").await;
    install(&ns).await;
    let server = model(
        &ns,
        vec![
            // The first turn ends without `loop done`.
            turn(
                prompt("Build the widget"),
                text("I have started on the widget; the tests are still missing."),
            ),
            turn(
                prompt("[overseer] nudge"),
                shell(&format!(
                    "{OVERSEER} loop done --reason 'widget and tests' && echo loop-done-accepted"
                )),
            ),
            turn(tool_result("loop-done-accepted"), text("Finished.")),
            // The supervised agent's tool call: the CLI must ask, and nobody answers.
            turn(
                prompt("Touch the marker"),
                shell("touch /workspace/made-without-asking"),
            ),
            turn(
                tool_result(""),
                text("(never sent: the command waits for a person)"),
            ),
        ],
    )
    .await;
    let _hops = HopsOnPanic(&ns, &server);
    agent(
        &ns,
        "builder",
        json!({"runtime": claude_runtime("tui"), "prompt": "Build the widget",
               "loop": {"enabled": true, "interval": "1s", "idleAfter": "3s", "cooldown": "1m",
                        "autoNudgeWithoutOverseer": true}}),
    )
    .await;
    careful_agent(&ns, claude_runtime("tui")).await;

    let done = agent_where(&ns, "builder", "the builder Done", |a| {
        phase(a) == Some(AgentPhase::Done)
    })
    .await;
    let status = done.status.unwrap();
    assert_eq!(status.loop_.as_ref().unwrap().nudges, 1, "one nudge");
    let exchanges = server.exchanges();
    let nudges = prompts_with(&exchanges, "[overseer] nudge");
    assert_eq!(
        nudges.len(),
        1,
        "the nudge reached the model once, as a user message"
    );
    print_start_to_prompt(&ns, "claude TUI", "builder-1", &server, "Build the widget").await;

    // The supervised claude asks before it runs the command, and nobody answers.
    assert_left_to_a_person(&ns, &server, 4).await;
    print_hops(&ns, &server);
}

#[tokio::test]
#[ignore = "needs a real node: run by hack/e2e/run.sh (make test)"]
async fn a_real_claude_overseer_directs_a_real_codex_builder() {
    let ns = namespace("real-overseer").await;
    install(&ns).await;
    let direction = "continue: add the missing tests";
    let server = model(
        &ns,
        vec![
            turn(
                prompt("Build the parser"),
                text("I have started on the parser; the tests are still missing."),
            ),
            // The real wake names the namespace; the sample wake of the overseer's
            // standing instructions (its first prompt) says NAMESPACE.
            turn(
                prompt(&format!("you oversee in namespace {}", ns.name)),
                shell(&format!(
                    "{OVERSEER} peek builder --lines 60 && echo peeked-builder"
                )),
            ),
            turn(
                tool_result("peeked-builder"),
                shell(&format!(
                    "{OVERSEER} send builder '{direction}' && echo sent-direction"
                )),
            ),
            turn(tool_result("sent-direction"), text("Directed the builder.")),
            turn(
                prompt(direction),
                shell(&format!(
                    "{OVERSEER} loop done --reason 'parser and tests' && echo builder-done"
                )),
            ),
            turn(tool_result("builder-done"), text("Done.")),
        ],
    )
    .await;
    let _hops = HopsOnPanic(&ns, &server);
    agent(
        &ns,
        "lead",
        json!({"role": "overseer", "oversees": ["builder"], "runtime": claude_runtime("tui")}),
    )
    .await;
    agent(
        &ns,
        "builder",
        json!({"overseer": "lead", "runtime": codex_runtime(&server, "tui"),
               "prompt": "Build the parser",
               "loop": {"enabled": true, "interval": "1s", "idleAfter": "3s", "cooldown": "1m"}}),
    )
    .await;

    let done = agent_where(&ns, "builder", "the codex builder Done", |a| {
        phase(a) == Some(AgentPhase::Done)
    })
    .await;
    let status = done.status.unwrap();
    assert_eq!(status.loop_.unwrap().wakes, 1, "one wake");
    assert_eq!(status.last_message.unwrap().excerpt, direction);
    let exchanges = server.exchanges();
    let wakes = prompts_with(&exchanges, &format!("you oversee in namespace {}", ns.name));
    assert_eq!(wakes.len(), 1, "the wake reached the overseer's model once");
    assert_eq!(wakes[0].api, model_standin::Api::AnthropicMessages);
    let directed = prompts_with(&exchanges, direction);
    assert!(
        directed
            .iter()
            .any(|e| e.api == model_standin::Api::OpenaiResponses),
        "the direction reached the builder's (codex's) model"
    );
    let peeked = exchanges
        .iter()
        .find_map(|e| match &e.last {
            Last::ToolResult(t) if t.contains("peeked-builder") => Some(t.clone()),
            _ => None,
        })
        .expect("the peek's output went back to the overseer's model");
    assert!(
        peeked.contains("the tests are still missing"),
        "the overseer read the builder's screen: {peeked}"
    );
    for (pod, needle) in [("lead-1", "overseer"), ("builder-1", "Build the parser")] {
        print_start_to_prompt(&ns, pod, pod, &server, needle).await;
    }
    print_hops(&ns, &server);
}

#[tokio::test]
#[ignore = "needs a real node: run by hack/e2e/run.sh (make test)"]
async fn a_real_codex_builder_escalates_and_its_real_claude_overseer_answers() {
    let ns = namespace("real-escalate").await;
    install(&ns).await;
    let answer = "continue: use the test key in .env.test";
    let wake = format!(
        "escalation(s) from agents you oversee in namespace {}",
        ns.name
    );
    let server = model(
        &ns,
        vec![
            turn(
                prompt("Deploy the parser"),
                shell(&format!(
                    "{OVERSEER} loop block --reason 'need the staging password' && echo blocked"
                )),
            ),
            turn(tool_result("blocked"), text("Blocked until someone helps.")),
            turn(
                prompt(&wake),
                shell(&format!(
                    "{OVERSEER} escalations builder && echo read-escalations"
                )),
            ),
            turn(
                tool_result("read-escalations"),
                // An overseer answers with `send` (`loop add` is a person's: it writes
                // the Agent's annotations, which no agent may); the send acknowledges.
                shell(&format!("{OVERSEER} send builder '{answer}' && echo answered")),
            ),
            turn(tool_result("answered"), text("Answered the builder.")),
            turn(
                prompt(answer),
                shell(&format!(
                    "{OVERSEER} loop done --reason 'deployed with the test key' && echo builder-done"
                )),
            ),
            turn(tool_result("builder-done"), text("Done.")),
        ],
    )
    .await;
    let _hops = HopsOnPanic(&ns, &server);
    agent(
        &ns,
        "lead",
        json!({"role": "overseer", "oversees": ["builder"], "runtime": claude_runtime("tui")}),
    )
    .await;
    agent(
        &ns,
        "builder",
        json!({"overseer": "lead", "runtime": codex_runtime(&server, "tui"),
               "prompt": "Deploy the parser",
               "loop": {"enabled": true, "interval": "1s", "idleAfter": "1h"}}),
    )
    .await;

    let done = agent_where(&ns, "builder", "the codex builder Done", |a| {
        phase(a) == Some(AgentPhase::Done)
    })
    .await;
    let status = done.status.unwrap();
    let escalation = &status.escalations[0];
    assert_eq!(escalation.kind, overseer::agent::EscalationKind::Blocked);
    assert_eq!(
        (escalation.state, escalation.acknowledged_by.as_deref()),
        (overseer::agent::EscalationState::Acknowledged, Some("lead"))
    );
    assert!(escalation.told_time.is_some());
    let exchanges = server.exchanges();
    let wakes = prompts_with(&exchanges, &wake);
    assert_eq!(
        wakes.len(),
        1,
        "the escalation reached the overseer's model once"
    );
    assert_eq!(wakes[0].api, model_standin::Api::AnthropicMessages);
    let Last::UserText(woken) = &wakes[0].last else {
        unreachable!()
    };
    assert!(
        woken.contains("- agent=builder escalation=1 kind=blocked severity=warning"),
        "{woken}"
    );
    assert!(
        !woken.contains("staging password"),
        "the builder's words: {woken}"
    );
    let read = exchanges
        .iter()
        .find_map(|e| match &e.last {
            Last::ToolResult(t) if t.contains("read-escalations") => Some(t.clone()),
            _ => None,
        })
        .expect("the escalations went back to the overseer's model");
    assert!(
        read.contains("need the staging password"),
        "the overseer read the reason with the command: {read}"
    );
    let answered = prompts_with(&exchanges, answer);
    assert!(
        answered
            .iter()
            .any(|e| e.api == model_standin::Api::OpenaiResponses),
        "the answer reached the builder's (codex's) model"
    );
    print_hops(&ns, &server);
}

#[tokio::test]
#[ignore = "needs a real node: run by hack/e2e/run.sh (make test)"]
async fn a_real_scout_mails_a_real_builder_and_the_swarm_is_suspended_and_resumed() {
    let ns = namespace("real-mail").await;
    install(&ns).await;
    let finding = "the total is computed in src/total.rs:42";
    let server = model(
        &ns,
        vec![
            turn(
                prompt("Map the totals"),
                shell(&format!(
                    "{OVERSEER} mail send builder --type finding '{finding}' && echo mailed"
                )),
            ),
            turn(tool_result("mailed"), text("Mailed the builder.")),
            turn(
                prompt("Fix the totals"),
                text("Waiting for the scout's finding."),
            ),
            turn(
                prompt("[overseer] mail:"),
                shell(&format!("{OVERSEER} mail read && echo read-mail")),
            ),
            turn(
                tool_result("read-mail"),
                shell(&format!(
                    "{OVERSEER} loop done --reason 'fixed src/total.rs' && echo builder-done"
                )),
            ),
            turn(tool_result("builder-done"), text("Done.")),
        ],
    )
    .await;
    let _hops = HopsOnPanic(&ns, &server);
    let env = json!({"envFrom": [{"secretRef": {"name": "model"}}]});
    create_object::<overseer::swarm::Swarm>(
        &ns,
        json!({"apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm", "metadata": {"name": "team"},
        "spec": {
            "defaults": {"runtime": claude_runtime("tui"), "podTemplate": env},
            "roles": {"researcher": {"runtime": claude_runtime("tui")},
                      "builder": {"runtime": codex_runtime(&server, "tui")}},
            "agents": [
                {"name": "scout", "role": "researcher", "prompt": "Map the totals"},
                {"name": "builder", "role": "builder", "prompt": "Fix the totals",
                 "loop": {"enabled": true, "interval": "1s", "idleAfter": "1h"}}
            ]}}),
    )
    .await;

    // The builder acts on the scout's finding: its notice named the scout, its body
    // reached the builder's model through `mail read` only.
    agent_where(&ns, "team-builder", "the codex builder Done", |a| {
        phase(a) == Some(AgentPhase::Done)
    })
    .await;
    let exchanges = server.exchanges();
    let notices = prompts_with(&exchanges, "[overseer] mail:");
    assert_eq!(notices.len(), 1, "one notice");
    assert_eq!(notices[0].api, model_standin::Api::OpenaiResponses);
    let Last::UserText(notice) = &notices[0].last else {
        unreachable!()
    };
    assert!(notice.contains("1 from team-scout (finding)"), "{notice}");
    assert!(
        !notice.contains("src/total.rs"),
        "the body was typed: {notice}"
    );
    let read = exchanges
        .iter()
        .find_map(|e| match &e.last {
            Last::ToolResult(t) if t.contains("read-mail") => Some(t.clone()),
            _ => None,
        })
        .expect("the mail went back to the builder's model");
    assert!(read.contains(finding), "{read}");
    let scout = agent_where(&ns, "team-scout", "the scout's mail read", |a| {
        a.status
            .as_ref()
            .and_then(|s| s.mail.as_ref())
            .is_some_and(|m| {
                m.receipts
                    .iter()
                    .any(|r| r.state == overseer::agent::ReceiptState::Read)
            })
    })
    .await;
    let attempt = scout.status.and_then(|s| s.attempt).unwrap();

    // Suspended, the real pods go and the state stays; resumed, the scout runs again.
    let swarms: Api<overseer::swarm::Swarm> = ns.api();
    let patch = |on: bool| json!({"spec": {"suspend": on}});
    let params = kube::api::PatchParams::default();
    swarms
        .patch("team", &params, &kube::api::Patch::Merge(&patch(true)))
        .await
        .unwrap();
    let pods: Api<Pod> = ns.api();
    // The builder had ended its loop (Done): it stays as it ended, its pod kept for
    // the operator's pod retention; the others' pods go.
    wait_in(&ns, "the running members' pods gone", CLI_WAIT, || {
        let pods = pods.clone();
        async move {
            let list = pods
                .list(&kube::api::ListParams::default().labels("overseer.dev/swarm=team"))
                .await
                .ok()?;
            let running = list.items.iter().filter(|p| {
                let agent = p
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("overseer.dev/agent"));
                agent.is_some_and(|a| a != "team-builder")
            });
            (running.count() == 0).then_some(())
        }
    })
    .await;
    agent_where(&ns, "team-scout", "the scout Suspended", |a| {
        phase(a) == Some(AgentPhase::Suspended)
    })
    .await;
    let done = agent_where(&ns, "team-builder", "the builder still Done", |a| {
        phase(a) == Some(AgentPhase::Done)
    })
    .await;
    assert!(done.status.unwrap().mail.unwrap().received_count == 1);
    swarms
        .patch("team", &params, &kube::api::Patch::Merge(&patch(false)))
        .await
        .unwrap();
    let resumed = agent_where(&ns, "team-scout", "the scout running again", |a| {
        a.status.as_ref().is_some_and(|s| s.is_ready())
    })
    .await;
    let status = resumed.status.unwrap();
    assert_eq!(
        status.attempt,
        Some(attempt + 1),
        "a new pod for the same agent"
    );
    assert_eq!(status.mail.unwrap().sent, 1, "its record kept");
    print_hops(&ns, &server);
}

#[tokio::test]
#[ignore = "needs a real node: run by hack/e2e/run.sh (make test)"]
async fn a_real_claude_commits_in_its_git_workspace_and_the_work_outlives_its_pod() {
    let ns = namespace("real-git").await;
    install(&ns).await;
    // The team's git server: HTTPS, its certificate signed by a private CA.
    let git = GitServer::start(address_for_pods(&ns).await).await;
    let repository = git.repository("billing", &[("README.md", "# Billing\n")]);
    let subject = "Add the changelog";
    let server = model(
        &ns,
        vec![
            turn(
                prompt("Write the changelog"),
                shell(&format!(
                    "printf 'v1: first\\n' > CHANGELOG.md && git add CHANGELOG.md \
                     && git -c user.name=builder -c user.email=builder@example.com commit -qm '{subject}' \
                     && git push -q origin HEAD && echo pushed-changelog"
                )),
            ),
            turn(tool_result("pushed-changelog"), text("Committed and pushed.")),
        ],
    )
    .await;
    let _hops = HopsOnPanic(&ns, &server);
    let template = git.trusted_in(&ns).await;
    agent(
        &ns,
        "builder",
        json!({"role": "builder", "runtime": claude_runtime("tui"),
        "prompt": "Write the changelog", "loop": {"enabled": false},
        "workspace": {"git": {"url": repository}},
        "podTemplate": template}),
    )
    .await;

    let branch = "overseer/builder";
    wait_in(
        &ns,
        "the commit pushed to the agent's branch",
        CLI_WAIT,
        || {
            let pushed = git.last_subject("billing", branch);
            async move { (pushed.as_deref() == Some(subject)).then_some(()) }
        },
    )
    .await;
    assert_eq!(
        git.last_subject("billing", "main").as_deref(),
        Some("Start"),
        "main is untouched"
    );

    // The pod goes; the next one clones the agent's branch from the server.
    let pods: Api<Pod> = ns.api();
    pods.delete("builder-1", &Default::default()).await.unwrap();
    agent_where(&ns, "builder", "the builder's second pod running", |a| {
        let status = a.status.as_ref();
        status.and_then(|s| s.attempt) == Some(2) && phase(a) == Some(AgentPhase::Running)
    })
    .await;
    let in_pod = |command: &[&str]| {
        let output = exec(&ns, "builder-2", command);
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    };
    let (head, last) = wait_in(&ns, "the new pod's workspace", CLI_WAIT, || {
        let head = in_pod(&[
            "git",
            "-C",
            "/workspace",
            "rev-parse",
            "--abbrev-ref",
            "HEAD",
        ]);
        let last = in_pod(&["git", "-C", "/workspace", "log", "--format=%s", "-1"]);
        async move { (!last.is_empty()).then_some((head, last)) }
    })
    .await;
    assert_eq!((head.as_str(), last.as_str()), (branch, subject));
    assert_eq!(in_pod(&["cat", "/workspace/CHANGELOG.md"]), "v1: first");
    println!(
        "e2e[{}]: real claude committed {subject:?} on {branch} through a tool call; after its pod was replaced the new one's workspace is on that commit",
        ns.name
    );
    print_hops(&ns, &server);
}

#[tokio::test]
#[ignore = "needs a real node: run by hack/e2e/run.sh (make test)"]
async fn headless_pi_and_copilot_run_a_tool_and_pi_reports_its_usage() {
    let ns = namespace("real-headless-2").await;
    install(&ns).await;
    let usage = |input_tokens, output_tokens| Usage {
        input_tokens,
        output_tokens,
    };
    let server = model(
        &ns,
        vec![
            Turn {
                usage: usage(1_100, 210),
                ..turn(prompt("Count the pi modules"), shell("echo pi-counted"))
            },
            Turn {
                usage: usage(1_300, 230),
                ..turn(tool_result("pi-counted"), text("There are 5 modules."))
            },
            turn(
                prompt("Count the copilot modules"),
                shell("echo copilot-counted"),
            ),
            turn(tool_result("copilot-counted"), text("There are 4 modules.")),
        ],
    )
    .await;
    let _hops = HopsOnPanic(&ns, &server);
    let (pi, pi_template) = pi_runtime(&ns, &server, "headless").await;
    agent(
        &ns,
        "counter-pi",
        json!({"runtime": pi, "prompt": "Count the pi modules", "loop": {"enabled": false},
               "podTemplate": pi_template}),
    )
    .await;
    agent(
        &ns,
        "counter-copilot",
        json!({"runtime": copilot_runtime("headless"), "prompt": "Count the copilot modules",
               "loop": {"enabled": false}}),
    )
    .await;

    let exited = |a: &Agent| {
        let activity = a.status.as_ref().and_then(|s| s.activity.as_ref());
        activity.is_some_and(|a| a.state == ActivityState::Exited)
    };
    let pi = agent_where(&ns, "counter-pi", "pi's run ended with its usage", |a| {
        let usage = a
            .status
            .as_ref()
            .and_then(|s| s.activity.as_ref()?.usage.as_ref());
        exited(a) && usage.is_some()
    })
    .await;
    let activity = pi.status.unwrap().activity.unwrap();
    let usage = activity.usage.unwrap();
    assert_eq!(activity.exit_code, Some(0));
    assert_eq!(
        (usage.runs, usage.input_tokens, usage.output_tokens),
        (1, 2_400, 440),
        "pi's usage is what the model stand-in sent"
    );
    let copilot = agent_where(&ns, "counter-copilot", "copilot's run ended", exited).await;
    assert_eq!(copilot.status.unwrap().activity.unwrap().exit_code, Some(0));
    assert!(
        server.unused_turns().is_empty(),
        "every scripted turn was used (each CLI ran its tool and sent the output back): {:?}",
        server.unused_turns()
    );
    for (pod, needle) in [
        ("counter-pi-1", "Count the pi modules"),
        ("counter-copilot-1", "Count the copilot modules"),
    ] {
        print_start_to_prompt(&ns, pod, pod, &server, needle).await;
    }
    print_hops(&ns, &server);
}

#[tokio::test]
#[ignore = "needs a real node: run by hack/e2e/run.sh (make test)"]
async fn the_real_pi_and_copilot_tuis_are_nudged_to_done_and_a_supervised_codex_waits() {
    let ns = namespace("real-loop-2").await;
    install(&ns).await;
    let server = model(
        &ns,
        vec![
            // Each builder's first turn ends without `loop done`.
            turn(
                prompt("Build the pi widget"),
                text("I have started on the widget; the tests are still missing."),
            ),
            turn(
                prompt("Build the copilot widget"),
                text("I have started on the widget; the tests are still missing."),
            ),
            Turn {
                times: 2,
                ..turn(
                    prompt("[overseer] nudge"),
                    shell(&format!(
                        "{OVERSEER} loop done --reason 'widget and tests' && echo loop-done-accepted"
                    )),
                )
            },
            Turn {
                times: 2,
                ..turn(tool_result("loop-done-accepted"), text("Finished."))
            },
            // The supervised codex: the model asks to leave the sandbox; codex must ask a
            // person, and nobody answers.
            turn(
                prompt("Touch the marker"),
                Reply::ShellAskingApproval("touch /workspace/made-without-asking".into()),
            ),
            turn(
                tool_result(""),
                text("(never sent: the command waits for a person)"),
            ),
        ],
    )
    .await;
    let _hops = HopsOnPanic(&ns, &server);
    let in_loop = json!({"enabled": true, "interval": "1s", "idleAfter": "3s", "cooldown": "1m",
                         "autoNudgeWithoutOverseer": true});
    let (pi, pi_template) = pi_runtime(&ns, &server, "tui").await;
    agent(
        &ns,
        "pi-builder",
        json!({"runtime": pi, "prompt": "Build the pi widget", "loop": in_loop,
               "podTemplate": pi_template}),
    )
    .await;
    agent(
        &ns,
        "copilot-builder",
        json!({"runtime": copilot_runtime("tui"), "prompt": "Build the copilot widget",
               "loop": in_loop}),
    )
    .await;
    careful_agent(&ns, codex_runtime(&server, "tui")).await;

    for (name, needle) in [
        ("pi-builder", "Build the pi widget"),
        ("copilot-builder", "Build the copilot widget"),
    ] {
        let done = agent_where(&ns, name, &format!("{name} Done"), |a| {
            phase(a) == Some(AgentPhase::Done)
        })
        .await;
        assert_eq!(
            done.status.unwrap().loop_.unwrap().nudges,
            1,
            "{name}: one nudge"
        );
        let label = format!("{name} TUI");
        print_start_to_prompt(&ns, &label, &format!("{name}-1"), &server, needle).await;
    }
    let exchanges = server.exchanges();
    assert_eq!(
        prompts_with(&exchanges, "[overseer] nudge").len(),
        2,
        "each nudge reached its model once, as a user message"
    );

    // The supervised codex asks before it runs the command, and nobody answers.
    assert_left_to_a_person(&ns, &server, 5).await;
    print_hops(&ns, &server);
}
