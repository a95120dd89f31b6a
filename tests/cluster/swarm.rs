//! The Swarm controller on the real control plane: its agents, their roles,
//! instructions and permissions, membership changes, isolation between swarms,
//! status counts, and deletion.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use overseer::agent::{Agent, AgentPhase};
use overseer::goal::Goal;
use overseer::swarm::Swarm;
use serde_json::json;

use crate::agent::{WAIT, wait_condition, wait_events};
use crate::support::cluster::{
    TestNamespace, agent_account, can_i, create_object, kubectl, operator, setup, wait_in,
};
use crate::support::health::assert_readers;

async fn create_swarm(ns: &TestNamespace, name: &str, spec: serde_json::Value) {
    create_object::<Swarm>(
        ns,
        json!({
            "apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm",
            "metadata": {"name": name}, "spec": spec
        }),
    )
    .await;
}

fn billing() -> serde_json::Value {
    json!({
        "defaults": {
            "runtime": {"name": "claude", "mode": "tui", "image": "example.com/claude:1"},
            "loop": {"enabled": true, "idleAfter": "90s"}
        },
        "roles": {"builder": {"runtime": {"name": "codex", "image": "example.com/codex:2"}}},
        "prompts": {
            "base": "Work only inside the billing service.",
            "profiles": {"research": "Report findings with file paths."}
        },
        "overseer": {"prompt": "Ship proration."},
        "agents": [
            {"name": "scout", "role": "scout", "prompt": "Map invoices."},
            {"name": "builder", "role": "builder", "prompt": "Implement proration."},
            {"name": "reviewer", "role": "reviewer"}
        ]
    })
}

/// The names of the Agents labelled with `swarm` (sorted).
async fn agents_of(ns: &TestNamespace, swarm: &str) -> Vec<String> {
    let mut names: Vec<String> = ns
        .api::<Agent>()
        .list(&ListParams::default().labels(&format!("overseer.dev/swarm={swarm}")))
        .await
        .unwrap()
        .items
        .iter()
        .filter(|a| a.metadata.deletion_timestamp.is_none())
        .map(|a| a.name_any())
        .collect();
    names.sort();
    names
}

async fn wait_agents(ns: &TestNamespace, swarm: &str, expected: &[&str]) {
    wait_in(
        ns,
        &format!("the agents of {swarm}: {expected:?}"),
        WAIT,
        || async { (agents_of(ns, swarm).await == expected).then_some(()) },
    )
    .await;
}

async fn wait_pod(ns: &TestNamespace, name: &str) -> Pod {
    let pods: Api<Pod> = ns.api();
    wait_in(ns, name, WAIT, || async {
        pods.get_opt(name).await.ok().flatten()
    })
    .await
}

async fn instructions(ns: &TestNamespace, agent: &str) -> String {
    let maps: Api<ConfigMap> = ns.api();
    let name = format!("{agent}-instructions");
    let map = wait_in(ns, &name, WAIT, || async {
        maps.get_opt(&name).await.ok().flatten()
    })
    .await;
    map.data
        .unwrap_or_default()
        .into_values()
        .next()
        .unwrap_or_default()
}

fn can(ns: &TestNamespace, agent: &str, verb: &str, resource: &str, sub: Option<&str>) -> String {
    can_i(ns, &agent_account(ns, agent), verb, resource, sub)
}

/// The `billing` swarm, once its overseer and three members exist.
async fn create_billing(ns: &TestNamespace) {
    create_swarm(ns, "billing", billing()).await;
    wait_agents(
        ns,
        "billing",
        &[
            "billing-builder",
            "billing-overseer",
            "billing-reviewer",
            "billing-scout",
        ],
    )
    .await;
}

fn status_of(swarm: &Swarm) -> overseer::swarm::SwarmStatus {
    swarm.status.clone().unwrap_or_default()
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_swarm_creates_its_agents_with_roles_instructions_and_permissions() {
    let ns = setup("swarm-create").await;
    let operator = operator(&ns);
    create_billing(&ns).await;
    let agents: Api<Agent> = ns.api();
    for (name, role) in [
        ("billing-overseer", "overseer"),
        ("billing-scout", "scout"),
        ("billing-builder", "builder"),
        ("billing-reviewer", "reviewer"),
    ] {
        let agent = agents.get(name).await.unwrap();
        assert_eq!(agent.spec.role, role);
        assert_eq!(
            agent.labels().get("overseer.dev/role").map(String::as_str),
            Some(role)
        );
        let owner = &agent.owner_references()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str()),
            ("Swarm", "billing")
        );
        if name != "billing-overseer" {
            assert_eq!(agent.spec.overseer.as_deref(), Some("billing-overseer"));
            assert!(agent.spec.loop_.enabled, "the swarm's default loop");
        }
    }

    // Runtime and image come from the role, else the swarm's defaults.
    let builder = wait_pod(&ns, "billing-builder-1").await.spec.unwrap();
    let scout_pod = wait_pod(&ns, "billing-scout-1").await;
    let uid = ns
        .api::<Swarm>()
        .get("billing")
        .await
        .unwrap()
        .uid()
        .unwrap();
    for label in [
        "overseer.dev/swarm",
        "overseer.dev/role",
        "overseer.dev/run",
    ] {
        let expected = match label {
            "overseer.dev/swarm" => "billing",
            "overseer.dev/role" => "scout",
            _ => uid.as_str(),
        };
        assert_eq!(
            scout_pod.labels().get(label).map(String::as_str),
            Some(expected),
            "{label}"
        );
    }
    let scout = scout_pod.spec.unwrap();
    assert_eq!(
        builder.containers[0].image.as_deref(),
        Some("example.com/codex:2")
    );
    assert_eq!(
        scout.containers[0].image.as_deref(),
        Some("example.com/claude:1")
    );
    // What `kubectl get agents` shows as RUNTIME: the runtime of the pod.
    // The status is written after the pod is made: under load a moment later.
    for (member, runtime) in [("billing-builder", "codex"), ("billing-scout", "claude")] {
        let shown = wait_in(
            &ns,
            &format!("{member}'s runtime in status"),
            WAIT,
            || async {
                let status = ns.api::<Agent>().get_status(member).await.ok()?.status?;
                status.runtime
            },
        )
        .await;
        assert_eq!(serde_json::to_value(shown).unwrap(), runtime, "{member}");
    }
    // A goal of the swarm: its builder step runs with the swarm's builder template.
    let goal: Goal = serde_json::from_value(json!({
        "apiVersion": "overseer.dev/v1alpha1", "kind": "Goal", "metadata": {"name": "ship"},
        "spec": {"swarm": "billing", "steps": [
            {"name": "fix", "role": "builder", "action": "Fix the proration bug"}]}
    }))
    .unwrap();
    ns.api::<Goal>()
        .create(&PostParams::default(), &goal)
        .await
        .unwrap();
    let step = wait_pod(&ns, "ship-s0-a1").await.spec.unwrap();
    assert_eq!(
        step.containers[0].image.as_deref(),
        Some("example.com/codex:2"),
        "the swarm role's runtime and image"
    );
    // The scout only reads: its workspace is mounted read-only; the builder's is not.
    let workspace = |spec: &k8s_openapi::api::core::v1::PodSpec| {
        spec.containers[0]
            .volume_mounts
            .clone()
            .unwrap()
            .into_iter()
            .find(|m| m.mount_path == "/workspace")
            .unwrap()
            .read_only
    };
    assert_eq!(workspace(&scout), Some(true));
    assert_eq!(workspace(&builder), None);

    // Instructions: base, then the role's profile, then the agent's own prompt.
    let text = instructions(&ns, "billing-scout").await;
    let base = text.find("Work only inside the billing service.").unwrap();
    let profile = text.find("You scout:").unwrap();
    let own = text.find("Map invoices.").unwrap();
    assert!(base < profile && profile < own, "{text}");
    assert!(
        instructions(&ns, "billing-builder")
            .await
            .contains("Implement proration.")
    );
    let maps: Api<ConfigMap> = ns.api();
    let builder_map = maps.get("billing-builder-instructions").await.unwrap();
    assert!(
        builder_map.data.unwrap().contains_key("AGENTS.md"),
        "codex reads AGENTS.md"
    );

    // Permissions, through the API server's authorizer.
    wait_in(
        &ns,
        "the overseer's Role covers its members",
        WAIT,
        || async {
            (can(
                &ns,
                "billing-overseer",
                "patch",
                "agents.overseer.dev/billing-scout",
                Some("status"),
            ) == "yes")
                .then_some(())
        },
    )
    .await;
    for (verb, resource, sub) in [
        (
            "patch",
            "agents.overseer.dev/billing-builder",
            Some("status"),
        ),
        ("patch", "agents.overseer.dev/billing-scout", None),
        ("create", "pods", None),
        ("create", "configmaps", None),
        ("patch", "configmaps/billing-scout-instructions", None),
    ] {
        assert_eq!(
            can(&ns, "billing-scout", verb, resource, sub),
            "no",
            "scout: {verb} {resource}"
        );
    }

    // Status follows the members.
    let swarms: Api<Swarm> = ns.api();
    let ready = wait_in(&ns, "the swarm Ready", WAIT, || async {
        let swarm = swarms.get("billing").await.ok()?;
        overseer::conditions::is_true(&status_of(&swarm).conditions, "Ready").then_some(swarm)
    })
    .await;
    assert_readers("Swarm", "ready", &ready, "Healthy");
    let metrics = operator.metrics().await.expect("/metrics answers");
    let line = "overseer_swarms{phase=\"Ready\"} 1";
    assert!(metrics.lines().any(|l| l == line), "{line} in:\n{metrics}");
    let status = status_of(&ready);
    assert_eq!(status.agents.total, 4);
    assert!(status.overseer.unwrap().ready);
    assert_eq!(status.members.len(), 4);
    wait_events(&ns, "billing", "AgentCreated").await;

    // An agent naming the swarm inherits its defaults; one naming no swarm there waits.
    crate::support::cluster::create_agent(&ns, "extra", json!({"swarm": "billing", "runtime": {}}))
        .await;
    let extra = wait_pod(&ns, "extra-1").await.spec.unwrap();
    assert_eq!(
        extra.containers[0].image.as_deref(),
        Some("example.com/codex:2"),
        "role builder"
    );
    crate::support::cluster::create_agent(&ns, "lost", json!({"swarm": "nowhere", "runtime": {}}))
        .await;
    wait_condition(&ns, "lost", "SwarmNotFound", |a| {
        a.status.as_ref().is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.reason == "SwarmNotFound")
        })
    })
    .await;
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn members_and_layers_follow_the_swarm_and_counts_follow_the_members() {
    let ns = setup("swarm-change").await;
    let _operator = operator(&ns);
    create_billing(&ns).await;
    let swarms: Api<Swarm> = ns.api();
    let change = json!({"spec": {
        "agents": [
            {"name": "builder", "role": "builder", "prompt": "Implement proration."},
            {"name": "reviewer", "role": "reviewer"},
            {"name": "tester", "role": "builder", "prompt": "Write the tests."}
        ],
        "prompts": {"base": "Work only inside the billing service, on branch proration."}
    }});
    swarms
        .patch("billing", &PatchParams::default(), &Patch::Merge(&change))
        .await
        .unwrap();
    wait_agents(
        &ns,
        "billing",
        &[
            "billing-builder",
            "billing-overseer",
            "billing-reviewer",
            "billing-tester",
        ],
    )
    .await;
    wait_events(&ns, "billing", "AgentRemoved").await;
    wait_in(&ns, "the new base reaches the builder", WAIT, || async {
        instructions(&ns, "billing-builder")
            .await
            .contains("on branch proration")
            .then_some(())
    })
    .await;

    // A member ends its loop: the swarm's counts follow.
    wait_condition(&ns, "billing-builder", "Running", |a| {
        a.status.as_ref().and_then(|s| s.phase) == Some(AgentPhase::Running)
    })
    .await;
    let exit = json!({"status": {"exit": {"outcome": "done", "reason": "shipped", "attempt": 1}}});
    ns.api::<Agent>()
        .patch_status(
            "billing-builder",
            &PatchParams::default(),
            &Patch::Merge(&exit),
        )
        .await
        .unwrap();
    let goal = json!({"apiVersion": "overseer.dev/v1alpha1", "kind": "Goal",
        "metadata": {"name": "ship"},
        "spec": {"swarm": "billing", "steps": [{"name": "a", "action": "write the code",
            "runtime": {"name": "pi", "image": "example.com/pi:1"}}]}});
    let applied = kubectl(&["apply", "-n", &ns.name, "-f", "-"], &goal.to_string());
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    let counted = wait_in(&ns, "counts: one done, one goal", WAIT, || async {
        let status = status_of(&swarms.get("billing").await.ok()?);
        (status.agents.done == 1 && status.goals.total == 1).then_some(status)
    })
    .await;
    assert_eq!(counted.agents.total, 4);
    let member = counted
        .members
        .iter()
        .find(|m| m.name == "billing-builder")
        .unwrap();
    assert_eq!(member.phase.as_deref(), Some("Done"));
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn two_swarms_never_touch_each_others_agents_and_deletion_leaves_nothing() {
    let ns = setup("swarm-isolation").await;
    let _operator = operator(&ns);
    let runtime = json!({"runtime": {"name": "pi", "image": "example.com/pi:1"}});
    // "a" + member "b-x" and "a-b" + member "x" both want an Agent named a-b-x.
    create_swarm(
        &ns,
        "a",
        json!({"defaults": runtime, "networkPolicy": true,
        "agents": [{"name": "b-x"}, {"name": "y"}]}),
    )
    .await;
    wait_agents(&ns, "a", &["a-b-x", "a-overseer", "a-y"]).await;
    create_swarm(
        &ns,
        "a-b",
        json!({"defaults": runtime, "agents": [{"name": "x"}, {"name": "z"}]}),
    )
    .await;
    wait_agents(&ns, "a-b", &["a-b-overseer", "a-b-z"]).await;
    let swarms: Api<Swarm> = ns.api();
    let refused = wait_in(&ns, "a-b reports the name it cannot take", WAIT, || async {
        let status = status_of(&swarms.get("a-b").await.ok()?);
        status
            .conditions
            .into_iter()
            .find(|c| c.type_ == "SpecValid" && c.status == "False")
    })
    .await;
    assert!(
        refused.message.contains("agent a-b-x already exists"),
        "{refused:?}"
    );
    let taken = ns.api::<Agent>().get("a-b-x").await.unwrap();
    assert_eq!(taken.owner_references()[0].name, "a", "still swarm a's");

    // The isolation object: only pods of the same swarm may connect.
    let policies: Api<NetworkPolicy> = ns.api();
    let policy = wait_in(&ns, "swarm a's NetworkPolicy", WAIT, || async {
        policies.get_opt("overseer-swarm-a").await.ok().flatten()
    })
    .await;
    let spec = policy.spec.unwrap();
    let selector = spec.pod_selector.unwrap().match_labels.unwrap();
    assert_eq!(
        selector.get("overseer.dev/swarm").map(String::as_str),
        Some("a")
    );
    let from = &spec.ingress.unwrap()[0].from.clone().unwrap()[0];
    assert_eq!(
        from.pod_selector.clone().unwrap().match_labels.unwrap(),
        selector
    );
    assert_eq!(spec.egress, None, "egress stays open unless asked");
    // Asked: the API server takes the policy with its egress rules (DNS, the swarm,
    // the public internet, the API server's address).
    swarms
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"egress": {"publicInternet": true, "allowCIDRs": ["10.96.0.1/32"]}}})),
        )
        .await
        .unwrap();
    let egress = wait_in(&ns, "swarm a's egress rules", WAIT, || async {
        policies
            .get_opt("overseer-swarm-a")
            .await
            .ok()
            .flatten()?
            .spec?
            .egress
    })
    .await;
    let peers = egress[1].to.clone().unwrap();
    let cidrs: Vec<String> = peers
        .iter()
        .filter_map(|p| p.ip_block.as_ref().map(|b| b.cidr.clone()))
        .collect();
    assert_eq!(cidrs, ["0.0.0.0/0", "::/0", "10.96.0.1/32"]);

    // Deleting a-b removes its own agents only; deleting a leaves nothing behind.
    swarms
        .delete("a-b", &DeleteParams::foreground())
        .await
        .unwrap();
    wait_agents(&ns, "a-b", &[]).await;
    assert_eq!(agents_of(&ns, "a").await, ["a-b-x", "a-overseer", "a-y"]);
    wait_pod(&ns, "a-y-1").await;
    swarms
        .delete("a", &DeleteParams::foreground())
        .await
        .unwrap();
    wait_in(
        &ns,
        "nothing of swarm a left",
        Duration::from_secs(90),
        || async {
            let agents = agents_of(&ns, "a").await;
            let pods: Api<Pod> = ns.api();
            let pods = pods.list(&ListParams::default()).await.ok()?.items;
            let maps: Api<ConfigMap> = ns.api();
            let instructions = maps
                .list(&ListParams::default().labels("overseer.dev/swarm=a"))
                .await
                .ok()?
                .items;
            let policy = policies.get_opt("overseer-swarm-a").await.ok()?;
            let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> = ns.api();
            let account = accounts.get_opt("overseer-agent-a-y").await.ok()?;
            (agents.is_empty()
                && pods.is_empty()
                && instructions.is_empty()
                && policy.is_none()
                && account.is_none())
            .then_some(())
        },
    )
    .await;
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_persons_suspend_of_a_member_is_not_undone_by_the_swarm() {
    let ns = setup("swarm-suspend").await;
    let _operator = operator(&ns);
    create_billing(&ns).await;
    let agents: Api<Agent> = ns.api();
    let suspend = json!({"spec": {"suspend": true}});
    agents
        .patch(
            "billing-scout",
            &PatchParams::default(),
            &Patch::Merge(&suspend),
        )
        .await
        .unwrap();
    wait_condition(&ns, "billing-scout", "Suspended", |a| {
        a.status.as_ref().and_then(|s| s.phase) == Some(AgentPhase::Suspended)
    })
    .await;
    // The swarm reconciles again (a change of its own); the member stays suspended.
    let swarms: Api<Swarm> = ns.api();
    let change =
        json!({"spec": {"prompts": {"base": "Work only inside the billing service, carefully."}}});
    swarms
        .patch("billing", &PatchParams::default(), &Patch::Merge(&change))
        .await
        .unwrap();
    let maps: Api<ConfigMap> = ns.api();
    wait_in(&ns, "the new base reaches the builder", WAIT, || async {
        let map = maps.get_opt("billing-builder-instructions").await.ok()??;
        let text: String = map.data?.into_values().collect();
        text.contains("carefully").then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let scout = agents.get("billing-scout").await.unwrap();
    assert!(scout.spec.suspend, "the person's suspend stands");
    assert_eq!(
        scout.status.and_then(|s| s.phase),
        Some(AgentPhase::Suspended)
    );
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn pod_templates_layer_into_member_and_step_pods() {
    let ns = setup("swarm-templates").await;
    let _operator = operator(&ns);
    let keys = json!({"secretRef": {"name": "api-keys"}});
    create_swarm(
        &ns,
        "tmpl",
        json!({
            "defaults": {
                "runtime": {"name": "claude", "mode": "tui", "image": "example.com/claude:1"},
                "podTemplate": {
                    "envFrom": [keys],
                    "env": [{"name": "LAYER", "value": "defaults"}],
                    "securityContext": {"runAsUser": 1000, "fsGroup": 1000}
                }
            },
            "roles": {"builder": {"podTemplate": {
                "resources": {"limits": {"memory": "1Gi"}},
                "tolerations": [{"key": "agents", "operator": "Exists"}]
            }}},
            "agents": [{
                "name": "builder", "role": "builder",
                "podTemplate": {"labels": {"team": "billing"}, "env": [{"name": "LAYER", "value": "member"}]}
            }]
        }),
    )
    .await;
    create_object::<Goal>(
        &ns,
        json!({
            "apiVersion": "overseer.dev/v1alpha1", "kind": "Goal",
            "metadata": {"name": "ship"},
            "spec": {
                "swarm": "tmpl",
                "podTemplate": {"env": [{"name": "LAYER", "value": "goal"}, {"name": "GOAL_ONLY", "value": "1"}]},
                "steps": [{
                    "name": "build", "role": "builder", "action": "Implement it",
                    "podTemplate": {"env": [{"name": "LAYER", "value": "step"}], "annotations": {"note": "step"}}
                }]
            }
        }),
    )
    .await;

    // (pod, the value of LAYER its last layer set, GOAL_ONLY)
    let member = wait_pod(&ns, "tmpl-builder-1").await;
    let step = wait_pod(&ns, "ship-s0-a1").await;
    for (pod, layer, goal_only) in [(&member, "member", None), (&step, "step", Some("1"))] {
        let spec = pod.spec.clone().unwrap();
        let container = &spec.containers[0];
        let env = |name: &str| {
            container
                .env
                .iter()
                .flatten()
                .find(|e| e.name == name)
                .and_then(|e| e.value.clone())
        };
        let name = pod.name_any();
        assert_eq!(
            env("LAYER").as_deref(),
            Some(layer),
            "{name}: the last layer wins"
        );
        assert_eq!(env("GOAL_ONLY").as_deref(), goal_only, "{name}");
        assert!(
            env("OVERSEER_ATTEMPT").is_some(),
            "{name}: the operator's env stays"
        );
        assert_eq!(
            serde_json::to_value(&container.env_from).unwrap(),
            json!([keys]),
            "{name}: the swarm's defaults"
        );
        let memory = container.resources.as_ref().and_then(|r| r.limits.clone());
        assert_eq!(
            memory
                .and_then(|l| l.get("memory").cloned())
                .map(|q| q.0)
                .as_deref(),
            Some("1Gi"),
            "{name}: the builder role's"
        );
        assert_eq!(
            spec.tolerations
                .iter()
                .flatten()
                .filter(|t| t.key.as_deref() == Some("agents"))
                .count(),
            1,
            "{name}"
        );
        let security = spec.security_context.unwrap();
        assert_eq!(
            (
                security.run_as_user,
                security.fs_group,
                security.run_as_non_root
            ),
            (Some(1000), Some(1000), Some(true)),
            "{name}: the template's user, still restricted"
        );
    }
    assert_eq!(
        member.labels().get("team").map(String::as_str),
        Some("billing")
    );
    assert_eq!(
        member
            .labels()
            .get("overseer.dev/agent")
            .map(String::as_str),
        Some("tmpl-builder")
    );
    assert_eq!(
        step.annotations().get("note").map(String::as_str),
        Some("step")
    );
}

/// The phase of each of `names`.
async fn phases(ns: &TestNamespace, names: &[&str]) -> Vec<Option<AgentPhase>> {
    let agents: Api<Agent> = ns.api();
    let mut found = Vec::new();
    for name in names {
        found.push(agents.get(name).await.unwrap().status.and_then(|s| s.phase));
    }
    found
}

/// The pods of the agent `name` that are not being deleted.
async fn live_pods(ns: &TestNamespace, name: &str) -> usize {
    let pods: Api<Pod> = ns.api();
    pods.list(&ListParams::default().labels(&format!("overseer.dev/agent={name}")))
        .await
        .unwrap()
        .items
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .count()
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_suspended_swarm_stops_its_members_and_resumes_them_where_they_were() {
    let ns = setup("swarm-halt").await;
    let _operator = operator(&ns);
    create_billing(&ns).await;
    let members = ["billing-scout", "billing-builder", "billing-overseer"];
    for member in members {
        wait_condition(&ns, member, "Running", |a| {
            a.status.as_ref().and_then(|s| s.phase) == Some(AgentPhase::Running)
        })
        .await;
    }
    let before = ns.api::<Agent>().get("billing-builder").await.unwrap();
    let swarms: Api<Swarm> = ns.api();
    let suspend = |on: bool| json!({"spec": {"suspend": on}});
    swarms
        .patch(
            "billing",
            &PatchParams::default(),
            &Patch::Merge(&suspend(true)),
        )
        .await
        .unwrap();
    wait_in(
        &ns,
        "every member suspended, its pod gone",
        WAIT,
        || async {
            let all = phases(&ns, &members).await;
            let suspended = all.iter().all(|p| *p == Some(AgentPhase::Suspended));
            let mut pods = 0;
            for member in members {
                pods += live_pods(&ns, member).await;
            }
            (suspended && pods == 0).then_some(())
        },
    )
    .await;
    let swarm = swarms.get("billing").await.unwrap();
    assert_readers("Swarm", "suspended by spec.suspend", &swarm, "Suspended");
    assert_eq!(
        swarm.status.unwrap().phase,
        Some(overseer::kinds::swarm::SwarmPhase::Suspended)
    );
    let held = ns.api::<Agent>().get("billing-builder").await.unwrap();
    assert_eq!(
        held.status.as_ref().and_then(|s| s.start_time.clone()),
        before.status.as_ref().and_then(|s| s.start_time.clone()),
        "its state is kept"
    );
    assert!(!held.spec.suspend, "the member's own spec is not written");

    swarms
        .patch(
            "billing",
            &PatchParams::default(),
            &Patch::Merge(&suspend(false)),
        )
        .await
        .unwrap();
    let resumed = wait_condition(&ns, "billing-builder", "Running again", |a| {
        a.status.as_ref().and_then(|s| s.phase) == Some(AgentPhase::Running)
    })
    .await;
    let (was, is) = (
        before.status.and_then(|s| s.attempt).unwrap(),
        resumed.status.and_then(|s| s.attempt).unwrap(),
    );
    assert_eq!(is, was + 1, "a new pod continues the same agent");
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_swarm_past_its_timeout_ends_with_a_report() {
    let ns = setup("swarm-timeout").await;
    let _operator = operator(&ns);
    let mut spec = billing();
    spec["timeout"] = json!("6s");
    create_swarm(&ns, "billing", spec).await;
    let swarms: Api<Swarm> = ns.api();
    let ended = wait_in(&ns, "the run ended", WAIT, || async {
        let swarm = swarms.get("billing").await.ok()?;
        swarm.status?.end
    })
    .await;
    assert_eq!(ended.reason, overseer::kinds::swarm::EndReason::TimedOut);
    let timed_out = swarms.get("billing").await.unwrap();
    assert_readers("Swarm", "its run timed out", &timed_out, "Degraded");
    let names: Vec<&str> = ended.report.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "billing-builder",
            "billing-overseer",
            "billing-reviewer",
            "billing-scout"
        ]
    );
    assert!(
        ended.report.iter().all(|m| m.attempts >= 1),
        "{:?}",
        ended.report
    );
    wait_events(&ns, "billing", "SwarmEnded").await;
    wait_in(&ns, "every member stopped", WAIT, || async {
        let all = phases(&ns, &["billing-builder", "billing-scout"]).await;
        all.iter()
            .all(|p| *p == Some(AgentPhase::Suspended))
            .then_some(())
    })
    .await;
    // The end stays as written.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let again = swarms.get("billing").await.unwrap().status.unwrap();
    assert_eq!(again.end, Some(ended));
    assert_eq!(again.phase, Some(overseer::kinds::swarm::SwarmPhase::Ended));
}
