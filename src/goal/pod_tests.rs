use std::time::Duration;

use super::*;
use crate::api::RuntimeSpec;
use crate::template::PodTemplate;

#[test]
fn a_read_only_steps_template_mounts_are_read_only_and_the_binary_always() {
    let goal: Goal = serde_json::from_value(serde_json::json!({
        "apiVersion": "overseer.dev/v1alpha1", "kind": "Goal",
        "metadata": {"name": "audit", "namespace": "team", "uid": "goal-uid"},
        "spec": {"steps": [{"name": "look", "action": "Read the code"}]}
    }))
    .unwrap();
    let template: PodTemplate = serde_json::from_value(serde_json::json!({
        "volumes": [{"name": "cache", "persistentVolumeClaim": {"claimName": "shared-cache"}}],
        "volumeMounts": [{"name": "cache", "mountPath": "/cache"}]
    }))
    .unwrap();
    for read_only in [false, true] {
        let pod = step_pod(&StepPodParams {
            goal: &goal,
            run: &StepRun {
                step: 0,
                name: "s0".into(),
                action: "a".into(),
                item: None,
                attempt: 1,
                role: "reviewer".into(),
                runtime: RuntimeSpec::default(),
                timeout: Duration::from_secs(60),
                template: template.clone(),
                read_only,
                instructions: String::new(),
                lands: None,
            },
            results: &Results::Inline("[]".into()),
            overseer_image: "overseer:1",
        });
        let mounts = pod.spec.unwrap().containers[0]
            .volume_mounts
            .clone()
            .unwrap();
        let mount = |path: &str| mounts.iter().find(|m| m.mount_path == path).unwrap();
        assert_eq!(
            mount("/cache").read_only == Some(true),
            read_only,
            "{mounts:?}"
        );
        assert_eq!(mount(BIN_DIR).read_only, Some(true), "{mounts:?}");
        assert_ne!(mount("/overseer").read_only, Some(true), "{mounts:?}");
    }
}

/// A goal's status with `n` steps succeeded, each with `result`.
fn succeeded(n: usize, result: &str) -> GoalStatus {
    serde_json::from_value(serde_json::json!({
        "completedSteps": n,
        "steps": (0..n).map(|i| serde_json::json!({
            "name": format!("s{i}"), "phase": "Succeeded", "result": result,
        })).collect::<Vec<_>>(),
    }))
    .unwrap()
}

#[test]
fn results_travel_in_the_pods_own_annotation_and_only_when_too_large_in_a_config_map() {
    let goal: Goal = serde_json::from_value(serde_json::json!({
        "apiVersion": "overseer.dev/v1alpha1", "kind": "Goal",
        "metadata": {"name": "ship", "namespace": "team", "uid": "goal-uid"},
        "spec": {"steps": [{"name": "s0", "action": "a"}, {"name": "s1", "action": "b"}]}
    }))
    .unwrap();
    // The user's template sets the same annotation: the results win.
    let template: PodTemplate = serde_json::from_value(serde_json::json!({
        "annotations": {RESULTS_ANNOTATION: "forged", "theirs": "kept"}
    }))
    .unwrap();
    let pod_with = |results: &Results| {
        step_pod(&StepPodParams {
            goal: &goal,
            run: &StepRun {
                step: 1,
                name: "s1".into(),
                action: "b".into(),
                item: None,
                attempt: 1,
                role: "builder".into(),
                runtime: RuntimeSpec::default(),
                timeout: Duration::from_secs(60),
                template: template.clone(),
                read_only: false,
                instructions: String::new(),
                lands: None,
            },
            results,
            overseer_image: "overseer:1",
        })
    };
    let volume = |pod: &Pod| {
        let volumes = pod.spec.clone().unwrap().volumes.unwrap();
        volumes.into_iter().find(|v| v.name == "results").unwrap()
    };

    let small = results(&goal, &succeeded(1, "built \"it\"\n"));
    let Results::Inline(json) = &small else {
        panic!("{small:?}")
    };
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(json).unwrap(),
        serde_json::json!([{"step": "s0", "result": "built \"it\"\n"}])
    );
    let pod = pod_with(&small);
    let annotations = pod.metadata.annotations.clone().unwrap();
    assert_eq!(annotations[RESULTS_ANNOTATION], *json);
    assert_eq!(annotations["theirs"], "kept");
    let file = &volume(&pod).downward_api.unwrap().items.unwrap()[0];
    assert_eq!(file.path, "results.json");
    assert_eq!(
        file.field_ref.as_ref().unwrap().field_path,
        "metadata.annotations['overseer.dev/results']"
    );

    // 40 results of 4 KiB: more than an annotation should carry.
    let large = results(&goal, &succeeded(40, &"x".repeat(4096)));
    let Results::ConfigMap(cm) = &large else {
        panic!("the large results stayed inline")
    };
    assert_eq!(cm.metadata.name.as_deref(), Some("ship-results"));
    assert!(cm.data.as_ref().unwrap()["results.json"].len() > INLINE_RESULTS_BYTES);
    let pod = pod_with(&large);
    assert!(
        !pod.metadata
            .annotations
            .clone()
            .unwrap()
            .contains_key(RESULTS_ANNOTATION)
    );
    assert_eq!(
        volume(&pod).config_map.unwrap().name,
        "ship-results",
        "the pod mounts the ConfigMap instead"
    );
}

#[test]
fn a_run_that_lands_clones_the_goals_branch_onto_its_own_and_is_told_where_to_land() {
    let goal: Goal = serde_json::from_value(serde_json::json!({
        "apiVersion": "overseer.dev/v1alpha1", "kind": "Goal",
        "metadata": {"name": "shop", "namespace": "team", "uid": "goal-uid"},
        "spec": {
            "workspace": {"git": {"url": "https://git.example.com/shop.git", "ref": "main"}},
            "steps": [{"name": "part", "action": "Build {{item}}", "forEach": ["a"]}]
        }
    }))
    .unwrap();
    let run = StepRun {
        step: 0,
        name: "part.1".into(),
        action: "Build a".into(),
        item: Some("a".into()),
        attempt: 2,
        role: "builder".into(),
        runtime: RuntimeSpec::default(),
        timeout: Duration::from_secs(60),
        template: PodTemplate::default(),
        read_only: false,
        instructions: String::new(),
        lands: Some(crate::goal::plan::LandsOn {
            branch: "overseer-runs/shop/part.1-a2".into(),
            onto: "overseer/shop".into(),
            checks: vec![],
        }),
    };
    let pod = step_pod(&StepPodParams {
        goal: &goal,
        run: &run,
        results: &Results::Inline("[]".into()),
        overseer_image: "overseer:1",
    });
    let spec = pod.spec.unwrap();
    let env_of = |env: &Option<Vec<EnvVar>>, name: &str| {
        env.iter()
            .flatten()
            .find(|e| e.name == name)
            .and_then(|e| e.value.clone())
    };
    let sync = &spec.init_containers.as_ref().unwrap()[1];
    assert_eq!(
        env_of(&sync.env, "OVERSEER_GIT_BRANCH").as_deref(),
        Some("overseer-runs/shop/part.1-a2")
    );
    assert_eq!(
        env_of(&sync.env, "OVERSEER_GIT_REF").as_deref(),
        Some("overseer/shop")
    );
    assert_eq!(
        env_of(&sync.env, START_FALLBACK_ENV).as_deref(),
        Some("main")
    );
    let agent = &spec.containers[0];
    assert_eq!(
        env_of(&agent.env, land::ONTO_ENV).as_deref(),
        Some("overseer/shop")
    );
    assert_eq!(env_of(&agent.env, "OVERSEER_ITEM").as_deref(), Some("a"));
    let workspace = spec
        .volumes
        .unwrap()
        .into_iter()
        .find(|v| v.name == workspace::VOLUME)
        .unwrap();
    assert!(workspace.empty_dir.is_some(), "{workspace:?}");
}
