//! The overseer's wake as one pure decision: which of the agents it oversees go in the
//! batch, the text that wakes it, and each member's claim. The shell
//! (controller/delivery.rs) reads the agents, claims, types and records.

use kube::ResourceExt;

use super::candidate::{self, OverseerState, Verdict};
use super::message::{self, WakeItem};
use crate::delivery::claims;
use crate::kinds::agent::{Agent, AgentPhase, AgentSpec, AgentStatus, Delivery, InFlightDelivery};

/// One wake of an overseer.
pub struct WakeBatch<'a> {
    /// What is typed into the overseer.
    pub text: String,
    /// Each member with its effective spec, and the claim recorded on it before the
    /// text is typed.
    pub members: Vec<(&'a Agent, &'a AgentSpec, InFlightDelivery)>,
}

/// The batch that wakes `overseer` of `namespace` on behalf of `asking`: every Running
/// agent of `agents` (each with its effective spec, on which it is judged) that names it and whose verdict is to
/// wake it. None when `asking` is not in the batch (no longer a candidate: a batch sent
/// meanwhile has started its cooldown).
pub fn wake_batch<'a>(
    namespace: &str,
    overseer: &str,
    asking: &str,
    agents: &'a [(Agent, AgentSpec)],
    now: jiff::Timestamp,
) -> Option<WakeBatch<'a>> {
    let batch: Vec<(&Agent, &AgentSpec, AgentStatus, candidate::CandidateInput)> = agents
        .iter()
        .filter(|(a, _)| a.spec.overseer.as_deref() == Some(overseer))
        .filter_map(|(a, spec)| {
            let status = a.status.clone().unwrap_or_default();
            let input = candidate::candidate_input(spec, &status, OverseerState::Ready, now);
            let running = status.phase == Some(AgentPhase::Running);
            (running && candidate::candidate(&input) == Verdict::WakeOverseer)
                .then_some((a, spec, status, input))
        })
        .collect();
    if !batch.iter().any(|(a, ..)| a.name_any() == asking) {
        return None;
    }
    let items: Vec<WakeItem> = batch
        .iter()
        .map(|(a, _, status, input)| {
            let (idle_for, idle_after, limit) = input.stopped_for();
            WakeItem {
                agent: a.name_any(),
                role: a.spec.role.clone(),
                state: input.stop().word(),
                idle_for,
                idle_after,
                limit,
                nudges: input.nudges,
                max_nudges: input.max_nudges,
                attempt: status.attempt.unwrap_or(0),
                // Named from what the operator knows, never from status text.
                pod: status
                    .attempt
                    .map(|attempt| crate::kinds::agent_pod::pod_name(&a.name_any(), attempt))
                    .unwrap_or_default(),
            }
        })
        .collect();
    // Each member's wake is claimed under an id of its own: an operator that stops
    // between the claim and the record asks the overseer's shim about it, and a batch
    // retried before it was recorded is confirmed without being typed twice.
    let members = batch
        .iter()
        .map(|(a, spec, status, input)| {
            let claim = InFlightDelivery {
                kind: Delivery::Wake,
                id: claims::delivery_id(&a.name_any(), status, Delivery::Wake),
                target: overseer.to_string(),
                reason: format!(
                    "overseer {overseer} woken: {}",
                    candidate::stop_reason(input)
                ),
            };
            (*a, *spec, claim)
        })
        .collect();
    Some(WakeBatch {
        text: message::wake(namespace, &items),
        members,
    })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;
    use crate::kinds::agent::{Activity, ActivityState};

    fn at(seconds: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(1_800_000_000 + seconds).unwrap()
    }

    /// An agent overseen by `overseer`, Running, `state` since `since`, whose own spec
    /// leaves its loop off; beside it its effective spec, where its swarm's defaults
    /// turned the loop on with `idleAfter: 60s`.
    fn agent(name: &str, overseer: &str, state: ActivityState, since: i64) -> (Agent, AgentSpec) {
        let mut agent: Agent = serde_saphyr::from_str(&format!(
            "apiVersion: overseer.dev/v1alpha1\nkind: Agent\nmetadata: {{name: {name}, namespace: team}}\n\
             spec: {{runtime: {{name: claude, image: example.com/claude:1}}, overseer: {overseer}}}\n"
        ))
        .unwrap();
        let mut effective = agent.spec.clone();
        effective.loop_ = serde_saphyr::from_str("{enabled: true, idleAfter: 60s}").unwrap();
        agent.status = Some(AgentStatus {
            attempt: Some(1),
            phase: Some(AgentPhase::Running),
            activity: Some(Activity {
                state,
                since: Some(Time(at(since))),
                last_activity_time: Some(Time(at(since))),
                heartbeat_time: None,
                attempt: Some(1),
                exit_code: None,
                summary: None,
                progress_time: None,
                usage: None,
                guards: None,
                resources: None,
            }),
            ..Default::default()
        });
        (agent, effective)
    }

    #[test]
    fn the_batch_holds_every_idle_agent_of_the_overseer_and_no_other() {
        let agents = [
            agent("a", "boss", ActivityState::Idle, 0),
            agent("b", "boss", ActivityState::Exited, 0),
            agent("busy", "boss", ActivityState::Working, 0),
            agent("fresh", "boss", ActivityState::Idle, 100),
            agent("other", "chief", ActivityState::Idle, 0),
        ];
        let batch = wake_batch("team", "boss", "a", &agents, at(120)).expect("a batch");
        let names: Vec<String> = batch.members.iter().map(|(a, ..)| a.name_any()).collect();
        assert_eq!(names, ["a", "b"], "idle and exited past idleAfter, of boss");
        for (member, _, claim) in &batch.members {
            assert_eq!(claim.kind, Delivery::Wake);
            assert_eq!(claim.target, "boss");
            assert!(claim.id.contains(&member.name_any()), "{}", claim.id);
        }
        assert_ne!(
            batch.members[0].2.id, batch.members[1].2.id,
            "one id per member"
        );
        assert!(batch.text.contains("2 agent(s)"), "{}", batch.text);
        assert!(batch.text.contains("exited"), "{}", batch.text);
    }

    #[test]
    fn no_batch_when_the_asking_agent_is_no_longer_a_candidate() {
        let agents = [
            agent("a", "boss", ActivityState::Idle, 0),
            agent("fresh", "boss", ActivityState::Idle, 100),
        ];
        assert!(wake_batch("team", "boss", "fresh", &agents, at(120)).is_none());
        assert!(wake_batch("team", "boss", "gone", &agents, at(120)).is_none());
        assert!(wake_batch("team", "chief", "a", &agents, at(120)).is_none());
    }

    #[test]
    fn members_are_judged_on_their_effective_spec_not_their_own() {
        let effective = [agent("a", "boss", ActivityState::Idle, 0)];
        assert!(wake_batch("team", "boss", "a", &effective, at(120)).is_some());
        // The same agent judged on its own spec (loop off) wakes nobody.
        let own: Vec<(Agent, AgentSpec)> = effective
            .iter()
            .map(|(a, _)| (a.clone(), a.spec.clone()))
            .collect();
        assert!(wake_batch("team", "boss", "a", &own, at(120)).is_none());
    }
}
