use super::*;
use crate::roles::{effective_spec, role};

fn swarm() -> Swarm {
    let mut swarm: Swarm = serde_saphyr::from_str(
        r#"
apiVersion: overseer.dev/v1alpha1
kind: Swarm
metadata: {name: billing, namespace: team, uid: 5a1e0000-0000-0000-0000-000000000001}
spec:
  defaults:
    runtime: {name: claude, mode: tui, image: example.com/claude:1}
    loop: {enabled: true, idleAfter: 90s}
  roles:
    scout: {profile: research}
    builder:
      runtime: {name: codex, image: example.com/codex:2}
      podTemplate: {resources: {limits: {memory: 4Gi}}}
    tester: {readOnly: true}
  prompts:
    base: Work only inside the billing service.
    profiles:
      research: Report findings with file paths.
  overseer:
    prompt: Ship proration.
  agents:
    - {name: scout, role: scout, prompt: Map invoices.}
    - {name: builder, role: builder, prompt: Implement proration., loop: {enabled: false}}
"#,
    )
    .unwrap();
    swarm.metadata.namespace = Some("team".into());
    swarm
}

fn agent_spec(yaml: &str) -> AgentSpec {
    serde_saphyr::from_str(yaml).unwrap()
}

/// (role, read only, profile starts with)
#[test]
fn roles_resolve_from_the_swarm_then_the_builtins() {
    let swarm = swarm();
    let rows: &[(&str, bool, Option<&str>)] = &[
        ("scout", true, Some("Report findings")),
        ("builder", false, Some("You build")),
        ("tester", true, None),
        ("reviewer", true, Some("You review")),
        ("monitor", true, Some("You monitor")),
        ("coordinator", false, Some("You coordinate")),
        ("designer", false, None),
    ];
    for (name, read_only, profile) in rows {
        let role = role(Some(&swarm.spec), name);
        assert_eq!(role.read_only, *read_only, "{name}");
        assert_eq!(
            role.profile
                .as_deref()
                .map(|p| &p[..p.len().min(profile.map_or(0, str::len))]),
            *profile,
            "{name}"
        );
    }
    assert!(
        role(None, "scout").read_only,
        "built-ins apply outside a swarm too"
    );
}

#[test]
fn an_agent_inherits_what_it_leaves_unset() {
    let swarm = swarm();
    /// (case, agent spec, runtime name, image, loop enabled, idleAfter, memory limit)
    type Row<'a> = (
        &'a str,
        &'a str,
        &'a str,
        &'a str,
        bool,
        &'a str,
        Option<&'a str>,
    );
    let rows: &[Row] = &[
        (
            "nothing set: swarm defaults",
            "{role: scout, swarm: billing}",
            "claude",
            "example.com/claude:1",
            true,
            "90s",
            None,
        ),
        (
            "the role's runtime and resources",
            "{role: builder, swarm: billing}",
            "codex",
            "example.com/codex:2",
            true,
            "90s",
            Some("4Gi"),
        ),
        (
            "its own runtime and loop win",
            "{role: builder, swarm: billing, runtime: {image: mine:3}, loop: {enabled: true, idleAfter: 5m}}",
            "codex",
            "mine:3",
            true,
            "5m",
            Some("4Gi"),
        ),
    ];
    for (case, yaml, runtime, image, enabled, idle_after, memory) in rows {
        let effective = effective_spec(&agent_spec(yaml), Some(&swarm), false);
        let name = serde_json::to_value(effective.runtime.name).unwrap();
        assert_eq!(name.as_str(), Some(*runtime), "{case}");
        assert_eq!(effective.runtime.image.as_deref(), Some(*image), "{case}");
        assert_eq!(effective.loop_.enabled, *enabled, "{case}");
        assert_eq!(effective.loop_.idle_after.as_str(), *idle_after, "{case}");
        let limit = effective
            .pod_template
            .and_then(|p| p.resources)
            .and_then(|r| r.limits)
            .and_then(|l| l.get("memory").cloned())
            .map(|q| q.0);
        assert_eq!(limit.as_deref(), *memory, "{case}");
    }
    let alone = agent_spec("{role: scout, runtime: {name: pi, image: p}}");
    assert_eq!(
        effective_spec(&alone, None, false),
        alone,
        "no swarm: unchanged"
    );
    // A member whose Swarm turned its loop off keeps it off.
    let member = agent_spec("{role: builder, swarm: billing, loop: {enabled: false}}");
    assert!(!effective_spec(&member, Some(&swarm), true).loop_.enabled);
}

#[test]
fn a_swarm_wants_its_overseer_and_members() {
    let agents = desired_agents(&swarm());
    let names: Vec<String> = agents.iter().map(|a| a.agent.name_any()).collect();
    assert_eq!(
        names,
        ["billing-overseer", "billing-scout", "billing-builder"]
    );
    // What the swarm applies: never `suspend`, and `loop` only where it sets one.
    let bodies: Vec<_> = agents.iter().map(DesiredAgent::apply_body).collect();
    insta::assert_yaml_snapshot!("desired_agents", bodies);
}

#[test]
fn a_persons_suspend_and_loop_on_a_member_are_not_the_swarms_to_undo() {
    let mut swarm = swarm();
    swarm.spec.defaults.loop_ = None;
    swarm.spec.agents[0].loop_ = None;
    let desired = desired_agents(&swarm);
    let scout = &desired[1];
    assert!(!scout.owns_loop);
    let mut edited = scout.agent.clone();
    edited.spec.suspend = true;
    edited.spec.loop_.enabled = true;
    assert!(
        scout.is_met_by(&edited),
        "a person's suspend and loop stand"
    );
    let body = scout.apply_body();
    assert!(body["spec"].get("suspend").is_none(), "{body}");
    assert!(body["spec"].get("loop").is_none(), "{body}");
    edited.spec.prompt = Some("changed by hand".into());
    assert!(!scout.is_met_by(&edited), "what the swarm owns is put back");
}

#[test]
fn a_missing_profile_is_named() {
    let mut swarm = swarm();
    swarm.spec.roles.get_mut("scout").unwrap().profile = Some("nope".into());
    assert_eq!(
        problems(&swarm),
        ["spec.roles.scout.profile: no profile \"nope\" in spec.prompts.profiles"]
    );
}

#[test]
fn an_agent_without_its_own_webhook_takes_its_swarms() {
    let mut swarm = swarm();
    swarm.spec.notify =
        serde_saphyr::from_str("{urlSecretRef: {name: team-hook, key: url}}").unwrap();
    let hook = |spec: &AgentSpec| spec.notify.as_ref().map(|n| n.url_secret_ref.name.clone());
    let member = agent_spec("{role: builder, swarm: billing}");
    assert_eq!(
        hook(&effective_spec(&member, Some(&swarm), true)).as_deref(),
        Some("team-hook")
    );
    let own = agent_spec(
        "{role: builder, swarm: billing, notify: {urlSecretRef: {name: mine, key: url}}}",
    );
    assert_eq!(
        hook(&effective_spec(&own, Some(&swarm), false)).as_deref(),
        Some("mine"),
        "its own wins"
    );
}

#[test]
fn the_network_policy_limits_egress_only_when_asked() {
    let mut swarm = swarm();
    swarm.spec.network_policy = true;
    let open = network_policy(&swarm).spec.unwrap();
    assert_eq!(open.policy_types, Some(vec!["Ingress".to_string()]));
    assert_eq!(open.egress, None, "egress stays open without spec.egress");
    swarm.spec.egress = Some(crate::kinds::swarm::SwarmEgress {
        public_internet: true,
        allow_cidrs: vec!["10.96.0.1/32".into()],
    });
    insta::assert_yaml_snapshot!("swarm_egress_policy", network_policy(&swarm).spec);
}
