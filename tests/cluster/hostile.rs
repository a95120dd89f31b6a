//! Objects that once crashed the operator: schema-valid giant durations. The operator
//! must stay up, report them, and go on with everyone else's objects.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams, PostParams};
use overseer::agent::Agent;
use overseer::goal::{Goal, StepPhase};
use serde_json::json;

use crate::support::cluster::{create_agent, create_simple_goal, operator, setup, wait_in};

const WAIT: Duration = Duration::from_secs(60);

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn giant_durations_neither_crash_the_operator_nor_stall_others() {
    let ns = setup("hostile-durations").await;
    let mut operator = operator(&ns);
    let goal: Goal = serde_json::from_value(json!({
        "apiVersion": "overseer.dev/v1alpha1", "kind": "Goal", "metadata": {"name": "giant"},
        "spec": {
            "defaults": {
                "runtime": {"name": "codex", "mode": "headless", "image": "example.com/codex:1"},
                "timeout": "99999999999h",
                "backoff": {"initial": "99999999999999999999h", "max": "99999999999999999999h"}
            },
            "steps": [{"name": "forever", "action": "Implement forever"}]
        }
    }))
    .unwrap();
    ns.api::<Goal>()
        .create(&PostParams::default(), &goal)
        .await
        .expect("the schema accepts a giant timeout");
    create_agent(
        &ns,
        "giant",
        json!({"loop": {"enabled": true, "idleAfter": "99999999999999999999h", "interval": "99999999999h"}}),
    )
    .await;
    // The giant goal's step runs and is checked against its deadline (the reconcile
    // that used to panic at `started + timeout`).
    let goals: Api<Goal> = ns.api();
    wait_in(&ns, "the giant goal's step Running", WAIT, || async {
        let status = goals.get("giant").await.ok()?.status?;
        (status.steps.first()?.phase == StepPhase::Running).then_some(())
    })
    .await;
    let agents: Api<Agent> = ns.api();
    wait_in(&ns, "the giant agent's pod made", WAIT, || async {
        agents.get("giant").await.ok()?.status?.pod_name
    })
    .await;
    // Everyone else goes on.
    create_simple_goal(&ns, "after", &["next"]).await;
    let pods: Api<Pod> = ns.api();
    wait_in(&ns, "the next goal's first pod", WAIT, || async {
        pods.get_opt("after-s0-a1").await.ok()?
    })
    .await;
    assert!(
        operator.child.try_wait().unwrap().is_none(),
        "the operator exited: see {}",
        operator.log_path.display()
    );
}

/// An agent may write its own status, `status.podName` included; the operator must
/// never take it as the pod to type into (it would type into any pod the agent names).
#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_forged_pod_name_never_aims_the_operators_input() {
    use crate::agent::{WAIT as AGENT_WAIT, agent, count};
    use crate::support::shim::{Shim, pod_shim, route_exec};
    use overseer::agent::AgentPhase;

    let ns = setup("hostile-podname").await;
    let _operator = operator(&ns);
    // A pod of someone else's, whose exec input reaches a shim of its own.
    let victim: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "victim"},
        "spec": {"containers": [{"name": "agent", "image": "example.com/victim:1"}]}
    }))
    .unwrap();
    ns.api::<Pod>()
        .create(&PostParams::default(), &victim)
        .await
        .unwrap();
    let victim_shim = Shim::start(
        &format!("{}-victim", ns.name),
        "tui",
        "pi",
        "tui-works-then-idles.sh",
        &[],
    );
    route_exec(&ns, "victim", &victim_shim).await;
    let own_shim = pod_shim(&ns, "mallory", 1, "pi", "tui-works-then-idles.sh").await;
    create_agent(
        &ns,
        "mallory",
        json!({"loop": {"enabled": true, "interval": "1s", "idleAfter": "1s", "cooldown": "1s",
            "maxNudges": 3, "autoNudgeWithoutOverseer": true}}),
    )
    .await;
    // Keep forging the pod name until the agent is Blocked (its nudges used up).
    let agents: Api<Agent> = ns.api();
    let forge = json!({"status": {"podName": "victim"}});
    wait_in(
        &ns,
        "mallory Blocked after its nudges",
        AGENT_WAIT,
        || async {
            let _ = agents
                .patch_status("mallory", &PatchParams::default(), &Patch::Merge(&forge))
                .await;
            tokio::time::sleep(Duration::from_millis(100)).await;
            let status = agent(&ns, "mallory").await.status?;
            (status.phase == Some(AgentPhase::Blocked)).then_some(())
        },
    )
    .await;
    let nudge = "[overseer] nudge";
    assert_eq!(
        count(&victim_shim.fake_log(), nudge),
        0,
        "{}",
        victim_shim.fake_log()
    );
    assert_eq!(
        count(&own_shim.fake_log(), nudge),
        3,
        "{}",
        own_shim.fake_log()
    );
}

/// A namespace user may aim a PRWatch anywhere; the operator sends the token only to
/// the API origins it was configured with. `localhost` reaches the same stand-in for
/// GitHub as the allowed `127.0.0.1`, so a refusal is the origin check and nothing else.
#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_prwatch_aimed_at_a_foreign_host_never_gets_the_token() {
    use crate::support::github::{FakeGitHub, create_watch};
    use overseer::prwatch::PRWatch;

    let ns = setup("hostile-prwatch").await;
    let _operator = operator(&ns);
    let github = FakeGitHub::start().await;
    let foreign = github.url.replace("127.0.0.1", "localhost");
    create_watch(
        &ns,
        &github,
        "pr7",
        "https://github.com/acme/billing/pull/7",
        "builder",
        json!({"github": {"apiURL": foreign, "tokenSecretRef": {"name": "gh", "key": "token"}}}),
    )
    .await;
    let watches: Api<PRWatch> = ns.api();
    let message = wait_in(&ns, "the poll refused", WAIT, || async {
        let status = watches.get("pr7").await.ok()?.status?;
        let polling = status.conditions.iter().find(|c| c.type_ == "Polling")?;
        (polling.reason == "PollFailed").then(|| polling.message.clone())
    })
    .await;
    assert!(message.contains("not at an API origin"), "{message}");
    assert_eq!(
        github.polls(),
        0,
        "the stand-in for GitHub was never called"
    );
}

/// A Secret goes only to the origins it is marked for: a PRWatch naming another
/// Secret of the namespace (one for an in-house service, say) at an origin the
/// operator allows gets a refused poll, and the token is never sent.
#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_secret_not_marked_for_the_origin_is_never_sent() {
    use crate::support::github::{FakeGitHub, create_watch};
    use k8s_openapi::api::core::v1::Secret;
    use overseer::prwatch::PRWatch;

    let ns = setup("hostile-prwatch-secret").await;
    let _operator = operator(&ns);
    let github = FakeGitHub::start().await;
    let secrets: Api<Secret> = ns.api();
    let other = serde_json::from_value(json!({"metadata": {"name": "deploy-key",
        "annotations": {"overseer.dev/github-origins": "https://ghe.example.com"}},
        "stringData": {"token": "for-another-service"}}))
    .unwrap();
    secrets
        .create(&PostParams::default(), &other)
        .await
        .unwrap();
    let unmarked = serde_json::from_value(json!({"metadata": {"name": "database"},
        "stringData": {"password": "not-for-github"}}))
    .unwrap();
    secrets
        .create(&PostParams::default(), &unmarked)
        .await
        .unwrap();
    for (watch, secret, key) in [
        ("pr8", "deploy-key", "token"),
        ("pr9", "database", "password"),
    ] {
        create_watch(
            &ns,
            &github,
            watch,
            "https://github.com/acme/billing/pull/7",
            "builder",
            json!({"github": {"apiURL": github.url, "tokenSecretRef": {"name": secret, "key": key}}}),
        )
        .await;
    }
    let watches: Api<PRWatch> = ns.api();
    for (watch, secret) in [("pr8", "deploy-key"), ("pr9", "database")] {
        let message = wait_in(&ns, &format!("{watch}'s poll refused"), WAIT, || async {
            let status = watches.get(watch).await.ok()?.status?;
            let polling = status.conditions.iter().find(|c| c.type_ == "Polling")?;
            (polling.reason == "PollFailed").then(|| polling.message.clone())
        })
        .await;
        assert!(
            message.contains(&format!("Secret {secret} is not marked for the origin")),
            "{message}"
        );
    }
    assert_eq!(github.polls(), 0, "no token was sent");
}

/// A timestamp the API server's `date-time` format takes but no Rust time type reads
/// (more than nine fractional digits) would make every list and watch of the kind fail
/// to deserialise; the schema refuses it with the field named.
#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn an_unreadable_timestamp_is_refused_by_the_schema() {
    use crate::support::cluster::create_simple_goal;

    let ns = setup("hostile-timestamp").await;
    create_simple_goal(&ns, "poison", &["a"]).await;
    let goals: Api<Goal> = ns.api();
    let start_at = |at: &'static str| {
        let goals = goals.clone();
        async move {
            let patch = json!({"status": {"startedAt": at}});
            goals
                .patch_status("poison", &PatchParams::default(), &Patch::Merge(&patch))
                .await
        }
    };
    let refused = start_at("2026-12-01T00:00:00.1234567891234Z")
        .await
        .expect_err("thirteen fractional digits are refused");
    assert!(
        refused.to_string().contains("status.startedAt"),
        "{refused}"
    );
    start_at("2026-12-01T00:00:00.123456789Z")
        .await
        .expect("nine fractional digits are a timestamp");
    // Every Goal of the namespace still reads.
    goals
        .list(&Default::default())
        .await
        .expect("the list deserialises");
}

/// A pod template the API server refuses (a quantity that is not one passes the
/// Agent's schema, whose `resources` is any map) is reported once, as a condition
/// with the API server's reason, and not retried until the agent changes. Before, the
/// reconcile failed forever with no condition: found by tests/cluster/fuzz.rs.
#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_pod_the_api_server_refuses_is_a_condition_not_a_retry_loop() {
    let ns = setup("hostile-refused-pod").await;
    let _operator = operator(&ns);
    create_agent(
        &ns,
        "odd",
        json!({"podTemplate": {"resources": {"limits": {"memory": "lots"}}}}),
    )
    .await;
    let agents: Api<Agent> = ns.api();
    let ready = wait_in(&ns, "odd's Ready condition", WAIT, || async {
        let status = agents.get("odd").await.ok()?.status?;
        status.conditions.into_iter().find(|c| c.type_ == "Ready")
    })
    .await;
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "PodRefused")
    );
    assert!(ready.message.contains("quantities must match"), "{ready:?}");
    let before = agents.get("odd").await.unwrap();
    tokio::time::sleep(Duration::from_secs(5)).await;
    let after = agents.get("odd").await.unwrap();
    assert_eq!(
        before.metadata.resource_version, after.metadata.resource_version,
        "nothing retried or rewritten while the agent is unchanged"
    );
    let refused = crate::agent::events(&ns, "odd", "PodRefused").await;
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].type_.as_deref(), Some("Warning"));
}

/// Names the operator would use, taken first by somebody else: nothing of theirs is
/// changed or taken over (no owner added, no field written), a foreign pod under a step
/// pod's name is not read as the step's, and each collision is a condition. (A goal's
/// results ConfigMap: tests/cluster/goal.rs, where results grow large enough to need one.)
#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn objects_of_another_owner_are_never_taken_over() {
    use k8s_openapi::api::core::v1::ServiceAccount;
    let ns = setup("hostile-foreign").await;
    let foreign = |name: &str| json!({"name": name, "labels": {"owner": "someone-else"}});
    let accounts: Api<ServiceAccount> = ns.api();
    let account =
        serde_json::from_value(json!({"metadata": foreign("overseer-agent-squatted")})).unwrap();
    accounts
        .create(&PostParams::default(), &account)
        .await
        .unwrap();
    let pods: Api<Pod> = ns.api();
    let pod = serde_json::from_value(json!({"metadata": foreign("squatted-pod-s0-a1"),
        "spec": {"containers": [{"name": "c", "image": "example.com/theirs:1"}]}}))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();

    let _operator = operator(&ns);
    create_agent(&ns, "squatted", json!({})).await;
    create_simple_goal(&ns, "squatted-pod", &["a"]).await;

    let agents: Api<Agent> = ns.api();
    let ready = wait_in(&ns, "the agent's NameTaken condition", WAIT, || async {
        let status = agents.get("squatted").await.ok()?.status?;
        status
            .conditions
            .into_iter()
            .find(|c| c.type_ == "Ready" && c.reason == "NameTaken")
    })
    .await;
    assert!(
        ready
            .message
            .contains("ServiceAccount overseer-agent-squatted"),
        "{ready:?}"
    );
    let goals: Api<Goal> = ns.api();
    let progressing = wait_in(&ns, "goal squatted-pod's NameTaken", WAIT, || async {
        let status = goals.get("squatted-pod").await.ok()?.status?;
        status
            .conditions
            .into_iter()
            .find(|c| c.type_ == "Progressing" && c.reason == "NameTaken")
    })
    .await;
    assert!(
        progressing.message.contains("Pod squatted-pod-s0-a1"),
        "{progressing:?}"
    );
    // Theirs, as they left it.
    let account = accounts.get("overseer-agent-squatted").await.unwrap();
    let pod = pods.get("squatted-pod-s0-a1").await.unwrap();
    assert!(account.metadata.owner_references.is_none(), "{account:?}");
    assert!(pod.metadata.owner_references.is_none(), "{pod:?}");
    let managers = &account.metadata.managed_fields;
    assert!(
        managers
            .iter()
            .flatten()
            .all(|m| m.manager.as_deref() != Some("overseer-controller")),
        "the operator wrote to a foreign object: {managers:?}"
    );
    // No Role or binding was made for the agent beside the taken account.
    let roles: Api<k8s_openapi::api::rbac::v1::Role> = ns.api();
    assert!(
        roles
            .get_opt("overseer-agent-squatted")
            .await
            .unwrap()
            .is_none()
    );
}

/// An overseen agent forges its own `status.attempt` so that its pod's name would be
/// another workload's (`payroll-2`, a StatefulSet's pod, secrets and all). The
/// overseer's Role only ever names pods the operator made for the agent (controller
/// owner uid and labels), so the forged name never opens that pod to the overseer.
#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_forged_attempt_never_opens_another_workloads_pod_to_the_overseer() {
    use crate::support::cluster::{agent_account, can_i, kubectl};

    let ns = setup("hostile-attempt").await;
    let _operator = operator(&ns);
    let foreign: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "payroll-2"},
        "spec": {"containers": [{"name": "app", "image": "example.com/payroll:1"}]}
    }))
    .unwrap();
    ns.api::<Pod>()
        .create(&PostParams::default(), &foreign)
        .await
        .unwrap();
    create_agent(
        &ns,
        "lead",
        json!({"role": "overseer", "oversees": ["payroll"]}),
    )
    .await;
    create_agent(&ns, "payroll", json!({"overseer": "lead"})).await;
    let lead = agent_account(&ns, "lead");
    let reads = |pod: &str| can_i(&ns, &lead, "get", &format!("pods/{pod}"), Some("log"));
    wait_in(&ns, "the lead may read payroll-1's log", WAIT, || async {
        (reads("payroll-1") == "yes").then_some(())
    })
    .await;
    // The agent's own account may write its status: it forges the attempt.
    let forged = kubectl(
        &[
            "patch",
            "agents.overseer.dev",
            "payroll",
            "-n",
            &ns.name,
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"attempt":2}}"#,
            "--as",
            &agent_account(&ns, "payroll"),
        ],
        "",
    );
    assert!(
        forged.status.success(),
        "the agent may write its status: {}",
        String::from_utf8_lossy(&forged.stderr)
    );
    // The lead's Role is written again (payroll-1 is no longer the recorded attempt's
    // pod); at no point before or after does it open payroll-2.
    wait_in(
        &ns,
        "the lead's Role rewritten after the forgery",
        WAIT,
        || async {
            assert_eq!(
                reads("payroll-2"),
                "no",
                "the forged attempt opened payroll-2"
            );
            (reads("payroll-1") == "no").then_some(())
        },
    )
    .await;
    for _ in 0..10 {
        assert_eq!(
            reads("payroll-2"),
            "no",
            "the forged attempt opened payroll-2"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Every member's creation is an Event that names it (the Events of one swarm were
/// folded into one series that kept the first member's name), and an object whose name
/// is as long as the API server allows still gets its Events (their names were refused).
#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn every_event_is_kept_by_what_it_says_whatever_the_objects_name() {
    use crate::agent::wait_events;
    use crate::support::cluster::create_object;
    use overseer::swarm::Swarm;

    let ns = setup("hostile-events").await;
    let _operator = operator(&ns);
    create_object::<Swarm>(
        &ns,
        json!({
            "apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm", "metadata": {"name": "crew"},
            "spec": {
                "defaults": {"runtime": {"name": "claude", "image": "example.com/claude:1"}},
                "agents": [{"name": "first", "role": "builder"}, {"name": "second", "role": "scout"}]
            }
        }),
    )
    .await;
    let notes = wait_in(&ns, "an AgentCreated Event per member", WAIT, || async {
        let found = wait_events(&ns, "crew", "AgentCreated").await;
        let mut notes: Vec<String> = found.into_iter().filter_map(|e| e.message).collect();
        notes.sort();
        (notes.len() == 3).then_some(notes)
    })
    .await;
    for member in ["crew-first", "crew-overseer", "crew-second"] {
        assert_eq!(
            notes
                .iter()
                .filter(|n| n.contains(&format!("agent {member} ")))
                .count(),
            1,
            "{member}: {notes:?}"
        );
    }

    let long = "g".repeat(253);
    create_simple_goal(&ns, &long, &["build"]).await;
    let started = wait_events(&ns, &long, "StepStarted").await;
    assert!(
        started
            .iter()
            .all(|e| e.metadata.name.as_ref().is_some_and(|n| n.len() <= 253)),
        "{started:?}"
    );
}

/// Every agent pod and step pod is a sandbox by default: an egress NetworkPolicy owned
/// by its Agent or Goal, which the API server takes, that picks exactly its pods and
/// allows DNS, the API server's own addresses, the public internet (never the private,
/// link-local or metadata ranges) and the Agent's `spec.egress.allowCIDRs`. A member of
/// a swarm that limits egress itself gets none beside the swarm's (policies add up).
#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn every_agent_and_step_pod_is_a_sandbox_by_default() {
    use crate::support::cluster::create_object;
    use k8s_openapi::api::core::v1::Endpoints;
    use k8s_openapi::api::networking::v1::NetworkPolicy;
    use kube::api::ListParams;
    use overseer::swarm::Swarm;

    let ns = setup("hostile-sandbox").await;
    let _operator = operator(&ns);
    create_agent(
        &ns,
        "builder",
        json!({"egress": {"allowCIDRs": ["10.40.0.12/32"]}}),
    )
    .await;
    create_simple_goal(&ns, "ship", &["build"]).await;
    create_object::<Swarm>(
        &ns,
        json!({
            "apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm", "metadata": {"name": "closed"},
            "spec": {
                "networkPolicy": true, "egress": {"publicInternet": false},
                "defaults": {"runtime": {"name": "claude", "image": "example.com/claude:1"}},
                "agents": [{"name": "member", "role": "builder"}]
            }
        }),
    )
    .await;
    let policies: Api<NetworkPolicy> = ns.api();
    let endpoints: Api<Endpoints> = Api::namespaced(ns.client.clone(), "default");
    let api_server: Vec<String> = endpoints
        .get("kubernetes")
        .await
        .unwrap()
        .subsets
        .iter()
        .flatten()
        .flat_map(|s| s.addresses.iter().flatten())
        .map(|a| format!("{}/32", a.ip))
        .collect();
    assert!(!api_server.is_empty(), "the API server's endpoints");
    for (name, pod, owner) in [
        ("overseer-sandbox-agent-builder", "builder-1", "builder"),
        ("overseer-sandbox-goal-ship", "ship-s0-a1", "ship"),
    ] {
        let policy = wait_in(&ns, name, WAIT, || async {
            policies.get_opt(name).await.ok().flatten()
        })
        .await;
        assert_eq!(
            policy.metadata.owner_references.as_ref().unwrap()[0].name,
            owner
        );
        let spec = policy.spec.unwrap();
        assert_eq!(spec.policy_types, Some(vec!["Egress".to_string()]));
        // It picks the pod the operator made, found by the policy's own selector.
        let labels = spec
            .pod_selector
            .as_ref()
            .unwrap()
            .match_labels
            .clone()
            .unwrap();
        let selector: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let picked = wait_in(&ns, pod, WAIT, || async {
            let found = ns
                .api::<Pod>()
                .list(&ListParams::default().labels(&selector.join(",")))
                .await
                .ok()?;
            let names: Vec<String> = found
                .items
                .iter()
                .map(|p| p.metadata.name.clone().unwrap())
                .collect();
            names.contains(&pod.to_string()).then_some(names)
        })
        .await;
        assert!(picked.iter().all(|p| p.starts_with(owner)), "{picked:?}");
        let egress = spec.egress.unwrap();
        let peers = egress[1].to.clone().unwrap();
        let cidrs: Vec<String> = peers
            .iter()
            .filter_map(|p| p.ip_block.as_ref().map(|b| b.cidr.clone()))
            .collect();
        let public = peers[0].ip_block.as_ref().unwrap();
        assert_eq!(public.cidr, "0.0.0.0/0");
        for closed in [
            "10.0.0.0/8",
            "169.254.0.0/16",
            "172.16.0.0/12",
            "192.168.0.0/16",
        ] {
            assert!(
                public
                    .except
                    .as_ref()
                    .unwrap()
                    .contains(&closed.to_string()),
                "{closed}"
            );
        }
        for address in &api_server {
            assert!(
                cidrs.contains(address),
                "the API server {address}: {cidrs:?}"
            );
        }
        assert_eq!(
            cidrs.contains(&"10.40.0.12/32".to_string()),
            owner == "builder",
            "the Agent's own allow-list: {cidrs:?}"
        );
    }
    wait_in(&ns, "the member's pod", WAIT, || async {
        ns.api::<Pod>()
            .get_opt("closed-member-1")
            .await
            .ok()
            .flatten()
    })
    .await;
    assert!(
        policies
            .get_opt("overseer-sandbox-agent-closed-member")
            .await
            .unwrap()
            .is_none(),
        "a swarm that limits egress governs its members alone"
    );
}
