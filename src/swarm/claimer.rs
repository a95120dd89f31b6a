//! The Swarm controller's side of file claims (the decisions are `claims.rs`): once the
//! reconcile wrote the claims held into the swarm's status (the record), it copies
//! them into the ConfigMap its members read (`overseer claims`) and answers each
//! member in its own status. A stop in between repeats the answer: a request answered
//! again finds its paths held by its member already and is granted again.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectMeta, Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use serde_json::json;

use super::claims::{self, ClaimAnswer, ClaimPlan};
use crate::api::{MANAGED_BY, label_value};
use crate::controller::Context;
use crate::kinds::agent::Agent;
use crate::kinds::claim::{CONFIG_MAP_KEY, ClaimState, config_map_name};
use crate::kinds::swarm::Swarm;
use crate::kubernetes::fresh::Applied;
use crate::{Error, Result, labels, reasons};

/// Field manager of the answers in a member's status.
const CLAIMER_MANAGER: &str = "overseer-claimer";
const ANSWER_TRIES: usize = 16;
/// The `Applied` kind of the claims' ConfigMaps.
pub const CONFIG_MAP: &str = "ClaimsConfigMap";

/// The ConfigMap its members read the claims of `swarm` from.
pub fn config_map(swarm: &Swarm, plan: &ClaimPlan) -> ConfigMap {
    let name = swarm.name_any();
    let text = serde_json::to_string_pretty(&plan.claims).unwrap_or_else(|_| "[]".into());
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(config_map_name(&name)),
            namespace: swarm.namespace(),
            labels: Some(
                [
                    (MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string()),
                    (labels::SWARM.to_string(), label_value(&name)),
                ]
                .into(),
            ),
            owner_references: swarm.controller_owner_ref(&()).map(|r| vec![r]),
            ..Default::default()
        },
        data: Some([(CONFIG_MAP_KEY.to_string(), text)].into()),
        ..Default::default()
    }
}

/// Carries out `plan` for `swarm`, whose status holds the plan's claims already: the
/// ConfigMap copy (written only when the claims differ from what this operator last
/// wrote), then the answers. Returns the problem met when the ConfigMap's name is
/// another owner's (the answers still go: the status is the record).
pub async fn carry_out(
    ctx: &Context,
    applied: &Applied,
    swarm: &Swarm,
    plan: &ClaimPlan,
) -> Result<Option<String>> {
    let problem = match copy(ctx, applied, swarm, plan).await {
        Err(taken @ Error::NameTaken { .. }) => Some(taken.to_string()),
        outcome => outcome.map(|()| None)?,
    };
    let agents: Api<Agent> =
        Api::namespaced(ctx.client.clone(), &swarm.namespace().unwrap_or_default());
    for (member, answer) in &plan.answers {
        tell(ctx, &agents, member, answer).await?;
    }
    Ok(problem)
}

/// Keeps the ConfigMap copy of the claims as `plan` has them.
async fn copy(ctx: &Context, applied: &Applied, swarm: &Swarm, plan: &ClaimPlan) -> Result<()> {
    let namespace = swarm.namespace().unwrap_or_default();
    let name = config_map_name(&swarm.name_any());
    let wanted = config_map(swarm, plan);
    if !applied.holds(CONFIG_MAP, &namespace, &name, &wanted) {
        let maps: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &namespace);
        let uid = swarm.uid().unwrap_or_default();
        let current = maps.get_opt(&name).await?;
        crate::api::ours_or_absent(current.as_ref(), &name, &uid)?;
        // No copy is made while nothing was ever claimed (`overseer claims` reads a
        // missing one as none), and one that holds the claims already is not written:
        // a restarted operator writes nothing for a swarm whose claims did not change.
        let holds_them = match &current {
            Some(map) => map.data == wanted.data,
            None => plan.claims.is_empty(),
        };
        if !holds_them {
            crate::api::apply_owned(&maps, &name, &uid, &wanted).await?;
        }
        applied.record(CONFIG_MAP, &namespace, &name, &wanted);
    }
    Ok(())
}

/// Writes `answer` into `member`'s status onto the version read; publishes
/// ClaimRefused on the member for each refusal written.
async fn tell(
    ctx: &Context,
    agents: &Api<Agent>,
    member: &str,
    answer: &ClaimAnswer,
) -> Result<()> {
    let params = PatchParams {
        field_manager: Some(CLAIMER_MANAGER.into()),
        ..Default::default()
    };
    for _ in 0..ANSWER_TRIES {
        let Some(fresh) = agents.get_opt(member).await? else {
            return Ok(());
        };
        let status = fresh.status.clone().unwrap_or_default();
        let Some(ledger) = claims::answered(status.claims.as_ref(), answer) else {
            return Ok(());
        };
        let patch = json!({
            "metadata": {"resourceVersion": fresh.resource_version()},
            "status": {"claims": ledger},
        });
        match agents
            .patch_status(member, &params, &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {
                for refused in answer
                    .records
                    .iter()
                    .filter(|r| r.state == ClaimState::Refused)
                {
                    let message = format!(
                        "claim #{} refused: {}",
                        refused.seq,
                        refused.reason.as_deref().unwrap_or_default()
                    );
                    ctx.publish_about(&fresh, true, reasons::CLAIM_REFUSED, &message);
                }
                return Ok(());
            }
            Err(kube::Error::Api(status)) if status.code == 409 => continue,
            Err(error) => return Err(error.into()),
        }
    }
    Err(Error::Busy(format!(
        "agent {member} changed {ANSWER_TRIES} times while its claim requests were answered"
    )))
}
