//! Prompt variables in an Agent's prompt and its swarm's layers on the real control
//! plane: replaced in what its pod is told; an unknown one is named in `Ready` and the
//! agent gets no pod until its spec defines it.

use k8s_openapi::api::core::v1::Pod;
use overseer::agent::Agent;
use serde_json::json;

use crate::agent::wait_condition;
use crate::support::cluster::{create_agent, operator, setup, wait_in};

fn prompt_of(pod: &Pod) -> Option<String> {
    let env = pod.spec.as_ref()?.containers[0].env.clone()?;
    env.into_iter().find(|e| e.name == "OVERSEER_PROMPT")?.value
}

fn invalid(agent: &Agent) -> Option<String> {
    let status = agent.status.as_ref()?;
    let ready = status.conditions.iter().find(|c| c.type_ == "Ready")?;
    (ready.reason == "InvalidSpec").then(|| ready.message.clone())
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn an_agents_variables_are_replaced_and_an_unknown_one_waits_for_its_definition() {
    let ns = setup("variables").await;
    let _operator = operator(&ns);
    create_agent(
        &ns,
        "builder",
        json!({"vars": {"gates": "make test"}, "prompt": "I am {{agent}} ({{role}}); run {{vars.gates}}. {{ .Keep }}"}),
    )
    .await;
    create_agent(
        &ns,
        "tracker",
        json!({"prompt": "Read {{vars.tracker}} first"}),
    )
    .await;

    let pods = ns.api::<Pod>();
    let pod = wait_in(&ns, "the builder's pod", crate::agent::WAIT, || async {
        pods.get_opt("builder-1").await.ok()?
    })
    .await;
    assert_eq!(
        prompt_of(&pod).as_deref(),
        Some("I am builder (builder); run make test. {{ .Keep }}")
    );

    let refused = wait_condition(&ns, "tracker", "Ready False InvalidSpec", |a| {
        invalid(a).is_some()
    })
    .await;
    let message = invalid(&refused).unwrap();
    assert!(
        message.starts_with(
            "spec.prompt: the variable {{vars.tracker}} is not defined (defined: {{agent}}"
        ),
        "{message}"
    );
    assert!(
        pods.get_opt("tracker-1").await.unwrap().is_none(),
        "no pod meanwhile"
    );

    // Defined, the agent starts with it.
    ns.api::<Agent>()
        .patch(
            "tracker",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"spec": {"vars": {"tracker": "gh issue view 7"}}})),
        )
        .await
        .unwrap();
    let pod = wait_in(&ns, "the tracker's pod", crate::agent::WAIT, || async {
        pods.get_opt("tracker-1").await.ok()?
    })
    .await;
    assert_eq!(
        prompt_of(&pod).as_deref(),
        Some("Read gh issue view 7 first")
    );
}
