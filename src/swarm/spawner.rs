//! The Swarm controller's side of spawning (the decisions are `spawn.rs`): once the
//! reconcile wrote the swarm's list of spawned members (the intent), it creates and
//! deletes their Agents, then answers each spawner in its own status, with mail when a member
//! it spawned ended. Every step can be repeated after a stop: a create of an Agent that
//! is ours already is taken as made, an answer already written is not written again.

use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use tracing::info;

use super::spawn::{self, Answer, SpawnPlan};
use crate::controller::Context;
use crate::delivery::mail;
use crate::kinds::agent::Agent;
use crate::kinds::spawn::SpawnState;
use crate::kinds::swarm::Swarm;
use crate::reasons;
use crate::{Error, Result};

/// Field manager of the answers in a spawner's status.
const SPAWNER_MANAGER: &str = "overseer-spawner";
/// Tries of an answer onto a spawner that keeps changing.
const ANSWER_TRIES: usize = 16;

/// Carries out `plan` for `swarm`, whose status holds the plan's list already (the
/// intent, written by the reconcile before anything is made); returns the plan as
/// carried out (an entry whose name another took is dropped).
pub async fn carry_out(ctx: &Context, swarm: &Swarm, mut plan: SpawnPlan) -> Result<SpawnPlan> {
    let namespace = swarm.namespace().unwrap_or_default();
    let agents: Api<Agent> = Api::namespaced(ctx.client.clone(), &namespace);
    create(ctx, &agents, swarm, &mut plan).await?;
    for name in &plan.delete {
        match agents.delete(name, &DeleteParams::default()).await {
            Ok(_) => info!(agent = %name, "cancelled spawned agent"),
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => return Err(error.into()),
        }
    }
    let prefix = format!("{}-", swarm.name_any());
    for (parent, answer) in &plan.answers {
        tell(ctx, &agents, parent, &prefix, answer).await?;
    }
    Ok(plan)
}

/// Creates the Agents of the entries that start. One that exists already is ours from
/// before a stop (taken as made) or somebody else's (the entry is dropped, NameTaken).
async fn create(
    ctx: &Context,
    agents: &Api<Agent>,
    swarm: &Swarm,
    plan: &mut SpawnPlan,
) -> Result<()> {
    let prefix = format!("{}-", swarm.name_any());
    let uid = swarm.uid().unwrap_or_default();
    for wanted in plan.create.clone() {
        let name = wanted.agent.name_any();
        match agents.create(&PostParams::default(), &wanted.agent).await {
            Ok(_) => {
                info!(agent = %name, "spawned swarm agent");
                let message = format!(
                    "agent {name} (role {}) spawned by {}",
                    wanted.agent.spec.role,
                    wanted.agent.spec.overseer.as_deref().unwrap_or_default()
                );
                ctx.publish_about(swarm, false, reasons::SPAWNED, &message);
            }
            Err(kube::Error::Api(status)) if status.code == 409 => {
                let current = agents.get_opt(&name).await?;
                if !current.is_some_and(|a| crate::api::controlled_by(&a, &uid)) {
                    spawn::name_taken_by_another(plan, &prefix, &name, jiff::Timestamp::now());
                }
            }
            Err(error) => return Err(error.into()),
        }
    }
    Ok(())
}

/// Writes `answer` into `parent`'s status onto the version read, with the mail that
/// goes with it; publishes SpawnRefused for each refusal written.
async fn tell(
    ctx: &Context,
    agents: &Api<Agent>,
    parent: &str,
    prefix: &str,
    answer: &Answer,
) -> Result<()> {
    let params = PatchParams {
        field_manager: Some(SPAWNER_MANAGER.into()),
        ..Default::default()
    };
    for _ in 0..ANSWER_TRIES {
        let Some(fresh) = agents.get_opt(parent).await? else {
            return Ok(());
        };
        let status = fresh.status.clone().unwrap_or_default();
        let Some((ledger, notices)) = spawn::answered(status.spawns.as_ref(), answer) else {
            return Ok(());
        };
        let mut fields = json!({"spawns": ledger});
        let mut with_mail = status.clone();
        for (member, body) in &notices {
            let from = format!("{prefix}{member}");
            let bodies = [body.clone()];
            let now = jiff::Timestamp::now();
            if let Some((mailbox, record)) =
                mail::from_operator(&with_mail, &from, "ended", &bodies, now)
            {
                with_mail.mailbox = mailbox;
                with_mail.mail = Some(record);
            }
        }
        if !notices.is_empty() {
            fields["mailbox"] = json!(with_mail.mailbox);
            fields["mail"] = json!(with_mail.mail);
        }
        let patch = json!({
            "metadata": {"resourceVersion": fresh.resource_version()},
            "status": fields,
        });
        match agents
            .patch_status(parent, &params, &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {
                publish_refusals(ctx, &fresh, &ledger, answer);
                count(ctx, status.spawns.as_ref(), &ledger);
                return Ok(());
            }
            Err(kube::Error::Api(status)) if status.code == 409 => continue,
            Err(error) => return Err(error.into()),
        }
    }
    Err(Error::Busy(format!(
        "agent {parent} changed {ANSWER_TRIES} times while its spawn requests were answered"
    )))
}

/// `overseer_swarm_spawns{state}`: each record the write set or moved.
fn count(
    ctx: &Context,
    before: Option<&crate::kinds::spawn::SpawnLedger>,
    after: &crate::kinds::spawn::SpawnLedger,
) {
    for record in &after.records {
        let was = before.and_then(|l| l.records.iter().find(|r| r.seq == record.seq));
        if was.is_some_and(|w| w.state == record.state) {
            continue;
        }
        let state = match record.state {
            SpawnState::Queued => "queued",
            SpawnState::Running => "running",
            SpawnState::Ended => "ended",
            SpawnState::Refused => "refused",
            SpawnState::Cancelled => "cancelled",
        };
        ctx.metrics
            .spawns
            .get_or_create(&crate::metrics::MailLabels { state })
            .inc();
    }
}

/// One SpawnRefused Event on the spawner for each refusal just written.
fn publish_refusals(
    ctx: &Context,
    parent: &Agent,
    ledger: &crate::kinds::spawn::SpawnLedger,
    answer: &Answer,
) {
    let before = parent.status.as_ref().and_then(|s| s.spawns.as_ref());
    for (record, _) in answer
        .records
        .iter()
        .filter(|(r, _)| r.state == SpawnState::Refused)
    {
        let told_before = before.is_some_and(|l| {
            l.records
                .iter()
                .any(|r| r.seq == record.seq && r.state == SpawnState::Refused)
        });
        if told_before || !ledger.records.iter().any(|r| r.seq == record.seq) {
            continue;
        }
        let message = format!(
            "spawn of {} refused: {}",
            record.name,
            record.reason.as_deref().unwrap_or_default()
        );
        ctx.publish_about(parent, true, reasons::SPAWN_REFUSED, &message);
    }
}
