//! The Helm chart renders, installs, and its least-privilege RBAC is enough: the
//! operator runs a goal, creates agents with their identities (an overseer's Role
//! included) and a swarm, and polls a PR with the token from its Secret, as the
//! chart's ServiceAccount.

use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Event, Pod};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::rbac::v1::Role;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::config::{AuthInfo, Kubeconfig};
use overseer::goal::{Goal, GoalPhase};
use overseer::prwatch::{PRWatch, PRWatchPhase};
use overseer::swarm::Swarm;
use serde_json::json;

use crate::support::cluster::{
    Operator, create_agent, create_simple_goal, kubeconfig_path, kubectl, repo_root, setup, tool,
    wait_in,
};
use crate::support::github::{FakeGitHub, Reply, create_watch, fixture};

fn kubectl_ok(args: &[&str], stdin: Option<&str>) -> String {
    let output = kubectl(args, stdin.unwrap_or_default());
    assert!(
        output.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn the_chart_installs_and_its_rbac_is_enough_for_every_kind() {
    let ns = setup("chart").await;
    let chart = repo_root().join("charts/overseer");
    let lint = Command::new(tool("helm"))
        .arg("lint")
        .arg(&chart)
        .output()
        .unwrap();
    assert!(
        lint.status.success(),
        "{}",
        String::from_utf8_lossy(&lint.stdout)
    );
    let rendered = Command::new(tool("helm"))
        .args(["template", "overseer"])
        .arg(&chart)
        .args([
            "--namespace",
            &ns.name,
            "--set",
            &format!("watchNamespace={},replicas=0", ns.name),
        ])
        .output()
        .unwrap();
    assert!(
        rendered.status.success(),
        "{}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    // Every object names its namespace (the sandbox's Role that reads the API server's
    // Endpoints is in `default`).
    kubectl_ok(
        &["apply", "-f", "-"],
        Some(&String::from_utf8(rendered.stdout).unwrap()),
    );

    // A kubeconfig that is the chart's ServiceAccount and nothing more.
    let token = kubectl_ok(
        &[
            "create",
            "token",
            "overseer",
            "-n",
            &ns.name,
            "--duration",
            "1h",
        ],
        None,
    );
    let mut kubeconfig = Kubeconfig::read_from(kubeconfig_path()).unwrap();
    for named in kubeconfig.auth_infos.iter_mut() {
        named.auth_info = Some(AuthInfo {
            token: Some(token.trim().to_string().into()),
            ..Default::default()
        });
    }
    let path = std::env::temp_dir().join(format!("overseer-sa-{}.kubeconfig", ns.name));
    std::fs::write(&path, serde_saphyr::to_string(&kubeconfig).unwrap()).unwrap();
    let operator = Operator::start_with_kubeconfig(
        &path,
        &[
            "--namespace",
            &ns.name,
            "--leader-elect",
            "--lease-namespace",
            &ns.name,
        ],
    );

    let goals: Api<Goal> = ns.api();
    create_simple_goal(&ns, "rbac", &["a"]).await;
    let pods: Api<Pod> = ns.api();
    wait_in(&ns, "step pod running", Duration::from_secs(30), || async {
        let pod = pods.get_opt("rbac-s0-a1").await.ok()??;
        (pod.status?.phase.as_deref() == Some("Running")).then_some(())
    })
    .await;
    let finish = json!({"metadata": {"annotations": {"kwok.overseer.dev/outcome": "Succeeded"}}});
    pods.patch(
        "rbac-s0-a1",
        &PatchParams::default(),
        &Patch::Merge(&finish),
    )
    .await
    .unwrap();
    wait_in(
        &ns,
        "goal Succeeded as the ServiceAccount",
        Duration::from_secs(30),
        || async {
            let phase = goals.get("rbac").await.ok()?.status?.phase;
            (phase == Some(GoalPhase::Succeeded)).then_some(())
        },
    )
    .await;
    // The goal's sandbox, made as the chart's account, allows the API server at the
    // addresses that account read from the `kubernetes` Endpoints.
    let policies: Api<k8s_openapi::api::networking::v1::NetworkPolicy> = ns.api();
    let sandbox = policies.get("overseer-sandbox-goal-rbac").await.unwrap();
    let endpoints: Api<k8s_openapi::api::core::v1::Endpoints> =
        Api::namespaced(ns.client.clone(), "default");
    let api_server = endpoints.get("kubernetes").await.unwrap();
    let address = api_server.subsets.unwrap()[0].addresses.clone().unwrap()[0]
        .ip
        .clone();
    let allowed = serde_json::to_string(&sandbox.spec).unwrap();
    assert!(allowed.contains(&format!("{address}/32")), "{allowed}");
    let events: Api<Event> = ns.api();
    let reasons: Vec<String> = events
        .list(&ListParams::default())
        .await
        .unwrap()
        .into_iter()
        .filter_map(|e| e.reason)
        .collect();
    assert!(
        reasons.iter().any(|r| r == "GoalSucceeded"),
        "events were allowed: {reasons:?}"
    );

    // Agents: their pods and identities, including an overseer's Role, which the
    // API server lets the operator grant only when it holds every rule itself.
    create_agent(&ns, "lead", json!({"role": "overseer", "oversees": ["*"]})).await;
    create_agent(&ns, "b", json!({"overseer": "lead"})).await;
    let roles: Api<Role> = ns.api();
    wait_in(
        &ns,
        "the overseer's Role, granted as the ServiceAccount",
        Duration::from_secs(30),
        || async {
            pods.get_opt("lead-1").await.ok()??;
            pods.get_opt("b-1").await.ok()??;
            let role = roles.get_opt("overseer-agent-lead").await.ok()??;
            let rules = role.rules?;
            let names = rules.first()?.resource_names.clone()?;
            let logs = rules.iter().any(|r| {
                r.resources
                    .as_ref()
                    .is_some_and(|x| x.contains(&"pods/log".to_string()))
            });
            (names == ["b", "lead"] && logs).then_some(())
        },
    )
    .await;

    // A swarm: its members and its NetworkPolicy, applied as the ServiceAccount.
    let swarm: Swarm = serde_json::from_value(json!({
        "apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm", "metadata": {"name": "team"},
        "spec": {"networkPolicy": true,
            "defaults": {"runtime": {"name": "pi", "image": "example.com/pi:1"}},
            "agents": [{"name": "scout", "role": "scout"}]}
    }))
    .unwrap();
    ns.api::<Swarm>()
        .create(&PostParams::default(), &swarm)
        .await
        .unwrap();
    let policies: Api<NetworkPolicy> = ns.api();
    let maps: Api<ConfigMap> = ns.api();
    wait_in(
        &ns,
        "the swarm's agents, instructions and policy, as the ServiceAccount",
        Duration::from_secs(30),
        || async {
            pods.get_opt("team-scout-1").await.ok()??;
            pods.get_opt("team-overseer-1").await.ok()??;
            maps.get_opt("team-scout-instructions").await.ok()??;
            policies.get_opt("overseer-swarm-team").await.ok()?
        },
    )
    .await;

    // A PR watch: the token read from its Secret, one poll, the end in status.
    let github = FakeGitHub::start().await;
    github.then([Reply::json(&fixture("merged", jiff::Timestamp::now()))]);
    create_watch(
        &ns,
        &github,
        "pr",
        "https://github.com/acme/billing/pull/7",
        "b",
        json!({}),
    )
    .await;
    let watches: Api<PRWatch> = ns.api();
    wait_in(
        &ns,
        "the PR watch Merged, as the ServiceAccount",
        Duration::from_secs(30),
        || async {
            let phase = watches.get("pr").await.ok()?.status?.phase;
            (phase == Some(PRWatchPhase::Merged)).then_some(())
        },
    )
    .await;
    assert_eq!(github.polls(), 1);
    assert!(github.refused().is_empty(), "{:?}", github.refused());

    // Every metric the chart's alert rules and dashboard name is one this operator
    // serves, after it ran each kind.
    let scrape = operator
        .metrics()
        .await
        .expect("the operator serves /metrics");
    let served: Vec<&str> = scrape
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let named = chart_metrics();
    assert!(
        named.len() >= 15,
        "the rules and panels name the metrics: {named:?}"
    );
    for name in named {
        let family = ["_total", "_bucket", "_sum", "_count"]
            .iter()
            .find_map(|suffix| name.strip_suffix(suffix))
            .unwrap_or(&name);
        assert!(
            served.contains(&family),
            "the chart names {name}, which the operator does not serve: {served:?}"
        );
    }
    let _ = std::fs::remove_file(path);
}

/// `helm template` of the chart as release `release` in `namespace` with `values`
/// (`--set` pairs): the rendered objects, or helm's error.
fn render(
    release: &str,
    namespace: &str,
    values: &[&str],
) -> Result<Vec<serde_json::Value>, String> {
    let mut command = Command::new(tool("helm"));
    command
        .args(["template", release])
        .arg(repo_root().join("charts/overseer"))
        .args(["--namespace", namespace]);
    for value in values {
        command.args(["--set", value]);
    }
    let output = command.output().unwrap();
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    let text = String::from_utf8(output.stdout).unwrap();
    let documents = serde_saphyr::from_multiple::<serde_json::Value>(&text)
        .unwrap_or_else(|e| panic!("helm template wrote YAML that does not parse: {e}"));
    // A template that renders nothing leaves an empty document.
    Ok(documents.into_iter().filter(|d| d.is_object()).collect())
}

fn of_kind<'a>(objects: &'a [serde_json::Value], kind: &str) -> Vec<&'a serde_json::Value> {
    objects.iter().filter(|o| o["kind"] == kind).collect()
}

// The chart's unit tests: what it renders for the values people set (helm-unittest's
// job, with the pinned helm and no plugin).
#[test]
#[ignore = "needs the pinned helm of the test cluster: run by `make test`"]
fn the_chart_renders_what_each_value_asks_for() {
    let defaults = render("overseer", "ops", &[]).unwrap();
    let deployment = of_kind(&defaults, "Deployment")[0];
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsUser"], 65532, "a numeric uid");
    assert_eq!(
        pod["topologySpreadConstraints"][0]["topologyKey"], "kubernetes.io/hostname",
        "two replicas spread over nodes"
    );
    let labels = &deployment["metadata"]["labels"];
    assert_eq!(labels["app.kubernetes.io/managed-by"], "Helm");
    assert_eq!(labels["helm.sh/chart"], "overseer-0.1.0");
    assert_eq!(
        deployment["spec"]["selector"]["matchLabels"],
        json!({"app.kubernetes.io/name": "overseer", "app.kubernetes.io/instance": "overseer"}),
        "the selector holds only labels that never change"
    );
    assert_eq!(
        of_kind(&defaults, "PodDisruptionBudget")[0]["spec"]["minAvailable"],
        1
    );
    let service = of_kind(&defaults, "Service")[0];
    assert_eq!(service["spec"]["ports"][0]["port"], 8080);
    assert!(of_kind(&defaults, "ServiceMonitor").is_empty());
    assert!(of_kind(&defaults, "PrometheusRule").is_empty());

    // Two releases of one name in two namespaces share no cluster-scoped object.
    let cluster_role = |objects: &[serde_json::Value]| {
        of_kind(objects, "ClusterRole")[0]["metadata"]["name"].clone()
    };
    let elsewhere = render("overseer", "ops-2", &[]).unwrap();
    assert_ne!(cluster_role(&defaults), cluster_role(&elsewhere));
    let binding = of_kind(&defaults, "ClusterRoleBinding")[0];
    assert_eq!(binding["roleRef"]["name"], cluster_role(&defaults));
    assert_eq!(binding["subjects"][0]["name"], "overseer");

    // One replica: no budget to keep, nothing to spread.
    let single = render("overseer", "ops", &["replicas=1"]).unwrap();
    assert!(of_kind(&single, "PodDisruptionBudget").is_empty());
    assert!(
        of_kind(&single, "Deployment")[0]["spec"]["template"]["spec"]
            .get("topologySpreadConstraints")
            .is_none()
    );

    let tuned = render(
        "team",
        "ops",
        &[
            "priorityClassName=system-cluster-critical",
            "imagePullSecrets[0].name=registry",
            "podAnnotations.a=b",
            "extraArgs[0]=--send-expiry=10m",
            "metrics.serviceMonitor.enabled=true",
            "metrics.prometheusRule.enabled=true",
            "tracing.otlpEndpoint=http://otel-collector.monitoring:4318",
            // OpenShift assigns the uid and gid.
            "podSecurityContext.runAsUser=null",
            "podSecurityContext.runAsGroup=null",
            "securityContext.readOnlyRootFilesystem=true",
            &format!("image.digest=sha256:{}", "0".repeat(64)),
        ],
    )
    .unwrap();
    let deployment = of_kind(&tuned, "Deployment")[0];
    assert_eq!(deployment["metadata"]["name"], "team-overseer");
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["priorityClassName"], "system-cluster-critical");
    assert_eq!(pod["imagePullSecrets"][0]["name"], "registry");
    assert_eq!(
        deployment["spec"]["template"]["metadata"]["annotations"]["a"],
        "b"
    );
    let args = pod["containers"][0]["args"].as_array().unwrap();
    assert!(args.contains(&json!("--send-expiry=10m")), "{args:?}");
    let env = pod["containers"][0]["env"].as_array().unwrap();
    let value_of = |name: &str| {
        env.iter()
            .find(|e| e["name"] == name)
            .map(|e| e["value"].clone())
    };
    assert_eq!(
        value_of("OTEL_EXPORTER_OTLP_ENDPOINT"),
        Some(json!("http://otel-collector.monitoring:4318"))
    );
    assert_eq!(
        value_of("OTEL_RESOURCE_ATTRIBUTES"),
        Some(json!(
            "k8s.namespace.name=$(POD_NAMESPACE),k8s.pod.name=$(POD_NAME)"
        ))
    );
    let default_env =
        &of_kind(&defaults, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]["env"];
    assert!(
        !default_env.to_string().contains("OTEL_"),
        "no traces unless asked: {default_env}"
    );
    assert_eq!(of_kind(&tuned, "ServiceMonitor").len(), 1);
    assert!(of_kind(&tuned, "PodMonitor").is_empty());
    let pod_monitored = render("overseer", "ops", &["metrics.podMonitor.enabled=true"]).unwrap();
    let monitor = of_kind(&pod_monitored, "PodMonitor")[0];
    assert_eq!(monitor["spec"]["podMetricsEndpoints"][0]["port"], "metrics");

    // The pod's and the container's securityContext are the values'; null removes a
    // field the platform sets.
    assert_eq!(
        pod["securityContext"],
        json!({"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}})
    );
    assert_eq!(
        pod["containers"][0]["securityContext"],
        json!({"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
            "capabilities": {"drop": ["ALL"]}})
    );
    // A digest pins the image, here and in the OVERSEER_IMAGE the agent pods get.
    let pinned = format!("ghcr.io/overseer-dev/overseer@sha256:{}", "0".repeat(64));
    assert_eq!(pod["containers"][0]["image"], pinned.as_str());
    assert_eq!(value_of("OVERSEER_IMAGE"), Some(json!(pinned)));

    // Each release elects its leader on a Lease of its own, which its Role names.
    let lease = |objects: &[serde_json::Value]| {
        let deployment = of_kind(objects, "Deployment")[0];
        let args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
            .as_array()
            .unwrap()
            .clone();
        let name = args
            .iter()
            .find_map(|a| a.as_str()?.strip_prefix("--lease-name="))
            .expect("a --lease-name")
            .to_string();
        let role = of_kind(objects, "Role")
            .into_iter()
            .find(|r| {
                r["metadata"]["name"]
                    .as_str()
                    .unwrap()
                    .ends_with("-leader-election")
            })
            .expect("the leader-election Role");
        assert_eq!(
            role["rules"][1]["resourceNames"],
            json!([name]),
            "get and update on that Lease only"
        );
        assert_eq!(role["rules"][0]["verbs"], json!(["create"]));
        name
    };
    assert_eq!(
        lease(&defaults),
        "overseer-controller",
        "release overseer keeps the Lease it had"
    );
    assert_eq!(lease(&tuned), "team-overseer-controller");

    // Every alert has a runbook, and the runbook has its section.
    let runbooks = std::fs::read_to_string(repo_root().join("docs/runbooks.md")).unwrap();
    let rule = of_kind(&tuned, "PrometheusRule")[0];
    let alerts: Vec<&serde_json::Value> = rule["spec"]["groups"][0]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    assert!(
        alerts.iter().any(|a| a["alert"] == "OverseerGoalsFailed"),
        "an alert for Failed goals"
    );
    for alert in alerts {
        let name = alert["alert"].as_str().unwrap();
        let url = alert["annotations"]["runbook_url"]
            .as_str()
            .unwrap_or_default();
        assert_eq!(
            url,
            format!(
                "https://github.com/overseer-dev/overseer/blob/main/docs/runbooks.md#{}",
                name.to_lowercase()
            ),
            "{name}"
        );
        assert!(
            runbooks.lines().any(|l| l == format!("## {name}")),
            "docs/runbooks.md has no section for {name}"
        );
    }

    // Unsafe or meaningless combinations are refused, naming what is wrong.
    let refusals = [
        (vec!["replicas=2", "leaderElect=false"], "leaderElect"),
        (
            vec![
                "metrics.serviceMonitor.enabled=true",
                "metrics.service.enabled=false",
            ],
            "metrics.service.enabled",
        ),
        (vec!["extraArgs[0]=oops"], "extraArgs"),
        (vec!["logFormat=yaml"], "logFormat"),
        (
            vec!["githubApiOrigins[0]=https://ghe.example.com/api"],
            "githubApiOrigins",
        ),
        (vec!["replica=2"], "replica"),
        (vec!["tracing.otlpEndpoint=otel:4318"], "otlpEndpoint"),
        (
            vec![
                "metrics.serviceMonitor.enabled=true",
                "metrics.podMonitor.enabled=true",
            ],
            "choose one",
        ),
        (vec!["image.digest=latest"], "digest"),
    ];
    for (values, field) in refusals {
        let refused = render("overseer", "ops", &values).expect_err(&format!("{values:?} refused"));
        assert!(refused.contains(field), "{values:?}: {refused}");
    }
}

/// The metric names the expressions of the chart's PrometheusRule and Grafana
/// dashboard use.
fn chart_metrics() -> Vec<String> {
    let rendered = render(
        "overseer",
        "ops",
        &[
            "metrics.prometheusRule.enabled=true",
            "metrics.grafanaDashboard.enabled=true",
        ],
    )
    .unwrap();
    let mut exprs: Vec<String> = Vec::new();
    let rule = of_kind(&rendered, "PrometheusRule")[0];
    for group in rule["spec"]["groups"].as_array().unwrap() {
        for alert in group["rules"].as_array().unwrap() {
            exprs.push(alert["expr"].as_str().unwrap().to_string());
        }
    }
    let dashboard = of_kind(&rendered, "ConfigMap")
        .into_iter()
        .find(|c| c["metadata"]["labels"]["grafana_dashboard"] == "1")
        .expect("the dashboard's ConfigMap, labelled for Grafana's sidecar");
    let dashboard: serde_json::Value =
        serde_json::from_str(dashboard["data"]["overseer.json"].as_str().unwrap()).unwrap();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            exprs.push(target["expr"].as_str().unwrap().to_string());
        }
    }
    for variable in dashboard["templating"]["list"].as_array().unwrap() {
        if let Some(query) = variable["query"]["query"].as_str() {
            exprs.push(query.to_string());
        }
    }
    let mut names = Vec::new();
    for expr in exprs {
        let mut rest = expr.as_str();
        while let Some(at) = rest.find("overseer_") {
            let name: String = rest[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            rest = &rest[at + name.len()..];
            names.push(name);
        }
    }
    names.sort();
    names.dedup();
    names
}

/// The chart as the release workflow packages it (hack/release/chart.sh): the tag's
/// version, the image pinned by the digest the image build printed, the metadata a
/// chart repository shows, its README and the licence.
#[test]
#[ignore = "needs the pinned helm of the test cluster: run by `make test`"]
fn the_release_chart_pins_the_image_by_digest() {
    let dist = repo_root().join("target/release-chart-test");
    let _ = std::fs::remove_dir_all(&dist);
    let digest = format!("sha256:{}", "ab".repeat(32));
    let packaged = Command::new("bash")
        .arg(repo_root().join("hack/release/chart.sh"))
        .args(["0.2.0", &digest])
        .env("HELM", tool("helm"))
        .env("DIST", &dist)
        .output()
        .unwrap();
    assert!(
        packaged.status.success(),
        "{}",
        String::from_utf8_lossy(&packaged.stderr)
    );
    let archive = String::from_utf8(packaged.stdout)
        .unwrap()
        .trim()
        .to_string();
    assert!(archive.ends_with("overseer-0.2.0.tgz"), "{archive}");
    let helm = |args: &[&str]| {
        let out = Command::new(tool("helm")).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let chart: serde_json::Value =
        serde_saphyr::from_str(&helm(&["show", "chart", &archive])).unwrap();
    assert_eq!(chart["version"], "0.2.0");
    assert_eq!(chart["appVersion"], "0.2.0");
    for field in ["home", "icon", "sources", "keywords", "maintainers"] {
        assert!(!chart[field].is_null(), "Chart.yaml has {field}");
    }
    assert!(
        helm(&["show", "readme", &archive]).contains("| `image.digest` |"),
        "the README of the values is in the package"
    );
    let rendered = helm(&["template", "overseer", &archive, "--namespace", "ops"]);
    let image = format!("ghcr.io/overseer-dev/overseer@{digest}");
    assert!(
        rendered.contains(&format!("image: {image}")),
        "the operator runs the signed image: {rendered}"
    );
    // A digest that is not one is refused before anything is packaged.
    let refused = Command::new("bash")
        .arg(repo_root().join("hack/release/chart.sh"))
        .args(["0.2.0", "latest"])
        .env("HELM", tool("helm"))
        .env("DIST", &dist)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("not a sha256 digest"));
}
