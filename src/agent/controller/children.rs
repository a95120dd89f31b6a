//! What an Agent owns besides its pod, applied only when it changed: its
//! ServiceAccount, Role and RoleBinding, its egress sandbox, and the ConfigMap of its
//! instructions.

use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use tracing::info;

use crate::Result;
use crate::agent::{instructions, pod, pr_watches};
use crate::api::{CONTROLLER_MANAGER, MANAGED_BY, apply_owned, label_value, ours_or_absent};
use crate::kinds::agent::{Agent, AgentSpec};
use crate::kinds::swarm::Swarm;
use crate::labels;
use crate::prwatch::PRWatch;
use crate::reasons;

use super::context::{AgentContext, Effective};

/// The uid its children's controller owner reference carries.
fn agent_uid(agent: &Agent) -> String {
    agent.uid().unwrap_or_default()
}

/// The file the agent's runtime (of its effective `spec`) reads its instructions from.
pub(super) fn instruction_file(spec: &AgentSpec) -> &'static str {
    crate::runtimes::lookup(spec.runtime.effective_name()).instruction_file
}

/// Applies the PRWatch of each pull request the agent asked to have watched (only
/// when it differs from what this operator last applied), with the access its spec
/// gives; without that access the requests are refused with one Warning Event.
pub(super) async fn sync_pr_watches(ac: &AgentContext, agent: &Agent) -> Result<()> {
    let requests = agent
        .status
        .as_ref()
        .map(|s| s.watch_requests.clone())
        .unwrap_or_default();
    if requests.is_empty() {
        return Ok(());
    }
    let namespace = agent.namespace().unwrap_or_default();
    let name = agent.name_any();
    let Some(access) = &agent.spec.pull_requests else {
        if !ac
            .applied
            .holds("PRWatchRefused", &namespace, &name, &requests)
        {
            let message = "the agent asked for pull request watches (overseer watch-pr) but spec.pullRequests.github is not set";
            ac.ctx
                .publish_about(agent, true, reasons::PR_WATCH_REFUSED, message);
            ac.applied
                .record("PRWatchRefused", &namespace, &name, &requests);
        }
        return Ok(());
    };
    let watches: Api<PRWatch> = Api::namespaced(ac.ctx.client.clone(), &namespace);
    for request in &requests {
        let watch = pr_watches::desired(agent, access, request)?;
        let watch_name = watch.name_any();
        if ac
            .applied
            .holds("PRWatch", &namespace, &watch_name, &watch.spec)
        {
            continue;
        }
        apply_owned(&watches, &watch_name, &agent_uid(agent), &watch).await?;
        ac.applied
            .record("PRWatch", &namespace, &watch_name, &watch.spec);
        info!(prwatch = %watch_name, stop = request.stop, "applied a pull request watch the agent asked for");
    }
    Ok(())
}

/// Writes an agent's composed instructions to its ConfigMap (owned by the Agent) when
/// they differ from what is there (read only when they differ both from what this
/// operator last applied or read and from the digest the agent's status records), and
/// returns their digest, for the status.
pub(super) async fn sync_instructions(
    ac: &AgentContext,
    agent: &Agent,
    effective: &Effective,
    overseer: bool,
) -> Result<String> {
    let swarm = effective.swarm.as_deref();
    const KIND: &str = "ConfigMap";
    let namespace = agent.namespace().unwrap_or_default();
    let name = pod::instructions_name(&agent.name_any());
    let file = instruction_file(&effective.spec);
    let text = instructions::compose(&instructions::Layers {
        agent: &agent.name_any(),
        spec: &effective.spec,
        swarm,
        overseer,
    });
    let digest = instructions_digest(file, &text);
    let wanted = std::collections::BTreeMap::from([(file.to_string(), text)]);
    if ac.applied.holds(KIND, &namespace, &name, &wanted) {
        return Ok(digest);
    }
    // Recorded by this operator once they were written: after a restart, no read.
    let recorded = agent
        .status
        .as_ref()
        .and_then(|s| s.instructions_digest.as_ref());
    if recorded == Some(&digest) {
        ac.applied.record(KIND, &namespace, &name, &wanted);
        return Ok(digest);
    }
    let maps: Api<ConfigMap> = Api::namespaced(ac.ctx.client.clone(), &namespace);
    let current = maps.get_opt(&name).await?;
    ours_or_absent(current.as_ref(), &name, &agent_uid(agent))?;
    if current.and_then(|m| m.data).as_ref() == Some(&wanted) {
        ac.applied.record(KIND, &namespace, &name, &wanted);
        return Ok(digest);
    }
    let map = ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(namespace.clone()),
            labels: Some(
                [
                    Some((MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string())),
                    Some((labels::AGENT.to_string(), label_value(&agent.name_any()))),
                    swarm.map(|s| (labels::SWARM.to_string(), label_value(&s.name_any()))),
                ]
                .into_iter()
                .flatten()
                .collect(),
            ),
            owner_references: agent.controller_owner_ref(&()).map(|r| vec![r]),
            ..Default::default()
        },
        data: Some(wanted),
        ..Default::default()
    };
    maps.patch(
        &name,
        &PatchParams::apply(CONTROLLER_MANAGER).force(),
        &Patch::Apply(&map),
    )
    .await?;
    if let Some(data) = &map.data {
        ac.applied.record(KIND, &namespace, &name, data);
    }
    info!(configmap = %name, "wrote the agent's instructions");
    Ok(digest)
}

/// `sha256:<hex>` of the instructions file's name and text: stable across builds, as a
/// status field must be (the std hasher is not).
fn instructions_digest(file: &str, text: &str) -> String {
    let mut context = ring::digest::Context::new(&ring::digest::SHA256);
    for part in [file, "\0", text] {
        context.update(part.as_bytes());
    }
    let hex: String = context
        .finish()
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

/// Keeps the agent's Role in step with whom it oversees (agents come and go); read
/// only when its rules differ from what this operator last applied or read.
pub(super) async fn sync_role(
    ac: &AgentContext,
    agent: &Agent,
    (overseen, fleet): (&[pod::Overseen], &[pod::Overseen]),
) -> Result<()> {
    let namespace = agent.namespace().unwrap_or_default();
    let name = pod::identity_name(&agent.name_any());
    let wanted = pod::role_rules(agent, overseen, fleet);
    if ac.applied.holds(ROLE, &namespace, &name, &wanted) {
        return Ok(());
    }
    // After a restart nothing is known as applied: the Roles' first list (consistent)
    // answers instead of one read per agent.
    let seen = ac.roles.take(&namespace, &name);
    if seen.is_some_and(|r| {
        r.controller.is_some_and(|uid| uid == agent_uid(agent))
            && r.rules_digest == pod::rules_digest(&wanted)
    }) {
        ac.applied.record(ROLE, &namespace, &name, &wanted);
        return Ok(());
    }
    let roles = Api::<Role>::namespaced(ac.ctx.client.clone(), &namespace);
    let current = roles.get_opt(&name).await?;
    ours_or_absent(current.as_ref(), &name, &agent_uid(agent))?;
    if current.and_then(|r| r.rules).as_ref() != Some(&wanted) {
        info!(overseen = ?overseen, "updating the agent's Role");
        ensure_identity(ac, agent, (overseen, fleet)).await?;
    } else {
        ac.applied.record(ROLE, &namespace, &name, &wanted);
    }
    Ok(())
}

/// The `Applied` kind of agents' Roles.
pub(super) const ROLE: &str = "Role";

/// The agent's ServiceAccount, Role and RoleBinding (server-side applied: idempotent).
pub(super) async fn ensure_identity(
    ac: &AgentContext,
    agent: &Agent,
    (overseen, fleet): (&[pod::Overseen], &[pod::Overseen]),
) -> Result<()> {
    let client = &ac.ctx.client;
    let namespace = agent.namespace().unwrap_or_default();
    let (account, role, binding) = pod::identity(agent, overseen, fleet);
    let name = pod::identity_name(&agent.name_any());
    let uid = agent_uid(agent);
    let accounts = Api::<ServiceAccount>::namespaced(client.clone(), &namespace);
    apply_owned(&accounts, &name, &uid, &account).await?;
    let roles = Api::<Role>::namespaced(client.clone(), &namespace);
    apply_owned(&roles, &name, &uid, &role).await?;
    let bindings = Api::<RoleBinding>::namespaced(client.clone(), &namespace);
    apply_owned(&bindings, &name, &uid, &binding).await?;
    if let Some(rules) = &role.rules {
        ac.applied.record(ROLE, &namespace, &name, rules);
    }
    Ok(())
}

/// Applies the agent's egress sandbox (src/egress.rs) before its pod is made.
pub(super) async fn ensure_sandbox(
    ac: &AgentContext,
    agent: &Agent,
    swarm: Option<&Swarm>,
) -> Result<()> {
    let allow = agent
        .spec
        .egress
        .as_ref()
        .map(|e| e.allow_cidrs.as_slice())
        .unwrap_or_default();
    crate::egress::ensure(
        &ac.ctx.client,
        &ac.ctx.sandbox,
        &ac.applied,
        agent,
        crate::egress::SandboxOf::Agent,
        swarm.map(|s| &s.spec),
        allow,
    )
    .await
}
