//! A swarm that grows and lands its work, on the real node with real CLIs against the
//! model stand-in: a real claude lead spawns a real codex writer; the writer commits,
//! pushes and asks the merge queue; an attempt's pod, under the real kubelet, merges
//! the commit onto main of the team's git server with the check passing; the writer
//! is mailed the merged commit and the lead is told when the writer ended.

use model_standin::Last;
use overseer::agent::AgentPhase;
use overseer::kinds::merge::MergeState;
use overseer::swarm::Swarm;
use serde_json::json;

use crate::real_cli::{
    CLI_WAIT, HopsOnPanic, OVERSEER, agent_where, claude_runtime, codex_runtime, model, phase,
    print_hops, prompt, prompts_with, shell, text, tool_result, turn,
};
use crate::release::{address_for_pods, install, namespace};
use crate::support::cluster::{create_object, wait_in};
use crate::support::git_server::GitServer;

#[tokio::test]
#[ignore = "needs a real node: run by hack/e2e/run.sh (make test)"]
async fn a_real_claude_lead_spawns_a_real_codex_writer_whose_work_lands_through_the_merge_queue() {
    let ns = namespace("real-team").await;
    install(&ns).await;
    let git = GitServer::start(address_for_pods(&ns).await).await;
    let repository = git.repository("billing", &[("README.md", "# Billing\n")]);
    let subject = "Add the changelog";
    let mut landed = turn(prompt("[overseer] mail:"), text("Noted."));
    landed.times = 4;
    let server = model(
        &ns,
        vec![
            turn(
                prompt("Lead the changelog"),
                shell(&format!(
                    "{OVERSEER} spawn writer --role builder --task 'Write the changelog' && echo spawned-writer"
                )),
            ),
            turn(tool_result("spawned-writer"), text("The writer is on it.")),
            turn(
                prompt("Write the changelog"),
                shell(&format!(
                    "printf 'v1: first\\n' > CHANGELOG.md && git add CHANGELOG.md \
                     && git -c user.name=writer -c user.email=writer@example.com commit -qm '{subject}' \
                     && git push -q origin HEAD && {OVERSEER} merge request && echo asked-to-merge"
                )),
            ),
            turn(
                tool_result("asked-to-merge"),
                shell(&format!(
                    "{OVERSEER} loop done --reason 'changelog queued' && echo writer-done"
                )),
            ),
            turn(tool_result("writer-done"), text("Done.")),
            landed,
        ],
    )
    .await;
    let _hops = HopsOnPanic(&ns, &server);
    let mut template = git.trusted_in(&ns).await;
    template["envFrom"] = json!([{"secretRef": {"name": "model"}}]);
    create_object::<Swarm>(
        &ns,
        json!({"apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm", "metadata": {"name": "team"},
        "spec": {
            "defaults": {"runtime": claude_runtime("tui"), "podTemplate": template,
                         "loop": {"enabled": true, "interval": "1s", "idleAfter": "1h"}},
            "roles": {"builder": {"runtime": codex_runtime(&server, "tui")}},
            "workspace": {"git": {"url": repository, "ref": "main"}},
            "coordination": {
                "spawn": {"allow": [{"from": "lead", "roles": ["builder"]}], "maxRunning": 1},
                "merge": {"checks": [{"name": "changelog", "command": ["test", "-s", "CHANGELOG.md"]}]}
            },
            "agents": [{"name": "lead", "role": "lead", "prompt": "Lead the changelog",
                        "loop": {"enabled": false}}]
        }}),
    )
    .await;

    // The writer's work is on main, merged by the queue with its check passing.
    let merged = wait_in(&ns, "the changelog merged onto main", CLI_WAIT, || {
        let last = git.last_subject("billing", "main");
        async move { last.filter(|s| s.starts_with("Merge overseer/team-writer")) }
    })
    .await;
    let writer = agent_where(&ns, "team-writer", "the writer Done", |a| {
        phase(a) == Some(AgentPhase::Done)
    })
    .await;
    assert_eq!(writer.spec.overseer.as_deref(), Some("team-lead"));
    let swarm = wait_in(&ns, "the queue's record", CLI_WAIT, || async {
        let swarm = ns.api::<Swarm>().get("team").await.ok()?;
        let queue = &swarm.status.as_ref()?.merge_queue;
        queue
            .iter()
            .any(|e| e.state == MergeState::Merged)
            .then_some(swarm)
    })
    .await;
    let entry = &swarm.status.unwrap().merge_queue[0];
    assert_eq!((entry.member.as_str(), entry.attempts), ("team-writer", 1));
    // The writer is mailed where its commit landed; the lead that it ended.
    let writer = agent_where(&ns, "team-writer", "the writer's mail", |a| {
        a.status
            .as_ref()
            .is_some_and(|s| s.mailbox.iter().any(|m| m.from == "merge-queue"))
    })
    .await;
    let mail = writer.status.unwrap().mailbox;
    assert!(mail[0].body.contains("is merged onto main as"), "{mail:?}");
    agent_where(&ns, "team-lead", "the lead told of the writer's end", |a| {
        a.status.as_ref().is_some_and(|s| {
            s.spawns.as_ref().is_some_and(|l| {
                l.records.iter().any(|r| {
                    r.name == "writer" && r.state == overseer::kinds::spawn::SpawnState::Ended
                })
            })
        })
    })
    .await;
    let told = wait_in(&ns, "the lead's CLI noticed its mail", CLI_WAIT, || {
        let exchanges = server.exchanges();
        let notice = prompts_with(&exchanges, "[overseer] mail:")
            .into_iter()
            .find(|e| e.api == model_standin::Api::AnthropicMessages)
            .cloned();
        async move { notice }
    })
    .await;
    let Last::UserText(notice) = &told.last else {
        unreachable!()
    };
    assert!(notice.contains("from team-writer (ended)"), "{notice}");

    // Spawn to the writer's first prompt at the model.
    let exchanges = server.exchanges();
    let spawned = exchanges
        .iter()
        .find(|e| matches!(&e.last, Last::ToolResult(t) if t.contains("spawned-writer")))
        .map(|e| e.received_ms)
        .expect("the spawn's result");
    let first = prompts_with(&exchanges, "Write the changelog")
        .iter()
        .find(|e| e.api == model_standin::Api::OpenaiResponses)
        .map(|e| e.received_ms)
        .expect("the writer's first prompt");
    println!(
        "e2e[{}]: real claude lead spawned a real codex writer: spawn answered -> the writer's first prompt at the model {:.1}s; merged onto main: {merged:?}",
        ns.name,
        (first as f64 - spawned as f64) / 1000.0
    );
    print_hops(&ns, &server);
}
