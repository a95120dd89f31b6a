//! The CLI with kubectl's conventions, against the local cluster: `--kubeconfig` and
//! `--context` pick the cluster as kubectl's do, `ps -o` prints what kubectl's `-o`
//! would, and kubectl itself completes `kubectl overseer ...` through the plugin's
//! completion script (hack/krew/kubectl_complete-overseer).

use std::process::Command;

use kube::config::{Kubeconfig, NamedContext};
use serde_json::json;

use crate::support::cluster::{create_agent, kubeconfig_path, repo_root, setup, tool};

fn overseer(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_overseer"))
        .args(args)
        // Nothing inferred: only the flags say which cluster.
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .output()
        .unwrap()
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn kubeconfig_and_context_flags_choose_the_cluster_and_ps_prints_json() {
    let ns = setup("cli-flags").await;
    create_agent(&ns, "solo", json!({})).await;
    // A kubeconfig whose current context points nowhere, and whose context `real` is
    // the test cluster.
    let mut config = Kubeconfig::read_from(kubeconfig_path()).unwrap();
    let real = config.contexts[0].clone();
    let mut nowhere = real.clone();
    nowhere.name = "nowhere".into();
    if let Some(context) = nowhere.context.as_mut() {
        context.cluster = "no-such-cluster".into();
    }
    config.contexts = vec![
        NamedContext {
            name: "real".into(),
            ..real
        },
        nowhere,
    ];
    config.current_context = Some("nowhere".into());
    let path = std::env::temp_dir().join(format!("overseer-cli-{}.kubeconfig", ns.name));
    std::fs::write(&path, serde_saphyr::to_string(&config).unwrap()).unwrap();
    let file = path.to_str().unwrap();

    let listed = overseer(&[
        "ps",
        "--kubeconfig",
        file,
        "--context",
        "real",
        "-n",
        &ns.name,
        "-o",
        "json",
    ]);
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let list: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(list["kind"], "List");
    assert_eq!(list["items"][0]["metadata"]["name"], "solo");

    let wrong = overseer(&["ps", "--kubeconfig", file, "-n", &ns.name]);
    assert!(
        !wrong.status.success(),
        "the current context points nowhere"
    );
    let said = String::from_utf8_lossy(&wrong.stderr);
    assert!(
        said.contains("no-such-cluster"),
        "the error names what is missing: {said}"
    );
    let _ = std::fs::remove_file(path);
}

/// PATH as a krew install leaves it: the plugin and its completion script, in a folder
/// of its own (returned with the PATH that puts it first).
fn krew_path(name: &str) -> (std::path::PathBuf, String) {
    let bin = std::env::temp_dir().join(format!("overseer-krew-{name}"));
    std::fs::create_dir_all(&bin).unwrap();
    let plugin = bin.join("kubectl-overseer");
    let _ = std::fs::remove_file(&plugin);
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_overseer"), &plugin).unwrap();
    std::fs::copy(
        repo_root().join("hack/krew/kubectl_complete-overseer"),
        bin.join("kubectl_complete-overseer"),
    )
    .unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    (bin, path)
}

/// `kubectl <args>` with the plugin on PATH: (success, stdout, stderr).
fn kubectl_with_plugin(path: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(tool("kubectl"))
        .args(args)
        .env("PATH", path)
        .env("KUBECONFIG", kubeconfig_path())
        .env_remove("OVERSEER_NAMESPACE")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The plugin prints as kubectl prints: `-n` before the command, `-o name` and
/// `-o jsonpath=...` byte for byte what `kubectl get` prints for the same objects,
/// `--no-headers`, the goals view, `-w`, `version`, and an unreachable server named.
#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn the_plugin_prints_what_kubectl_get_prints() {
    let ns = setup("cli-kubectl").await;
    for name in ["builder", "reviewer", "scout"] {
        create_agent(&ns, name, json!({})).await;
    }
    crate::support::cluster::create_simple_goal(&ns, "ship", &["plan", "build"]).await;
    let (bin, path) = krew_path(&ns.name);
    let ok = |args: &[&str]| {
        let (success, stdout, stderr) = kubectl_with_plugin(&path, args);
        assert!(success, "kubectl {args:?}: {stderr}");
        stdout
    };
    let n = ns.name.as_str();
    assert_eq!(
        ok(&["overseer", "-n", n, "ps", "-o", "name"]),
        ok(&["get", "agents", "-n", n, "-o", "name"])
    );
    assert_eq!(
        ok(&["overseer", "-n", n, "goals", "-o", "name"]),
        ok(&["get", "goals", "-n", n, "-o", "name"])
    );
    for template in [
        "{.items[*].metadata.name}",
        r#"{range .items[*]}{.metadata.name}{"\t"}{.spec.runtime.name}{"\n"}{end}"#,
        "{.items[0].metadata.labels}",
        "{.kind}",
    ] {
        let jsonpath = format!("jsonpath={template}");
        assert_eq!(
            ok(&["overseer", "ps", "-n", n, "-o", &jsonpath]),
            ok(&["get", "agents", "-n", n, "-o", &jsonpath]),
            "{template}"
        );
    }
    let table = ok(&["overseer", "ps", "-n", n, "--no-headers"]);
    assert_eq!(table.lines().count(), 3, "{table}");
    assert!(!table.contains("AGENT"), "{table}");
    let goals = ok(&["overseer", "goals", "-n", n]);
    assert!(
        goals.starts_with("GOAL ") && goals.contains("ship") && goals.contains("STEPS"),
        "{goals}"
    );
    let swarms = ok(&["overseer", "swarms", "-n", n, "-o", "json"]);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&swarms).unwrap()["items"],
        json!([])
    );

    // -w: the list, then each agent that changes.
    let mut watching = Command::new(tool("kubectl"))
        .args(["overseer", "ps", "-w", "--no-headers", "-n", n])
        .env("PATH", &path)
        .env("KUBECONFIG", kubeconfig_path())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = watching.stdout.take().unwrap();
    let (lines, seen) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let next = || {
        seen.recv_timeout(std::time::Duration::from_secs(30))
            .expect("a line from -w")
    };
    let first: Vec<String> = (0..3).map(|_| next()).collect();
    assert!(first[0].contains("builder"), "{first:?}");
    create_agent(&ns, "latecomer", json!({})).await;
    let mut changed = next();
    while !changed.contains("latecomer") {
        changed = next();
    }
    watching.kill().unwrap();
    let _ = watching.wait();

    let version = ok(&["overseer", "version"]);
    assert!(
        version.starts_with(&format!("Client Version: {}\n", env!("CARGO_PKG_VERSION")))
            && version.contains("Kubernetes Version: v1."),
        "{version}"
    );
    let _ = std::fs::remove_dir_all(bin);
}

/// A cluster that does not answer is named in the error, as kubectl names it.
#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn an_unreachable_api_server_is_named() {
    let ns = setup("cli-unreachable").await;
    let mut config = Kubeconfig::read_from(kubeconfig_path()).unwrap();
    for cluster in &mut config.clusters {
        if let Some(cluster) = cluster.cluster.as_mut() {
            cluster.server = Some("https://127.0.0.1:1".into());
        }
    }
    let path = std::env::temp_dir().join(format!("overseer-cli-{}.kubeconfig", ns.name));
    std::fs::write(&path, serde_saphyr::to_string(&config).unwrap()).unwrap();
    let out = overseer(&["ps", "--kubeconfig", path.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        said.contains("cannot reach the Kubernetes API server at https://127.0.0.1:1/"),
        "{said}"
    );
    let _ = std::fs::remove_file(path);
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn kubectl_completes_the_plugins_commands_flags_and_agent_names() {
    let ns = setup("cli-complete").await;
    for name in ["builder", "reviewer", "scout"] {
        create_agent(&ns, name, json!({})).await;
    }
    let (bin, path) = krew_path(&ns.name);
    let complete = |words: &[&str]| {
        let out = Command::new(tool("kubectl"))
            .args(["__complete", "overseer"])
            .args(words)
            .env("PATH", &path)
            .env("KUBECONFIG", kubeconfig_path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let values: Vec<String> = text
            .lines()
            .take_while(|l| !l.starts_with(':'))
            .map(|l| l.split('\t').next().unwrap_or_default().to_string())
            .collect();
        assert!(text.lines().any(|l| l == ":4"), "no file names: {text}");
        values
    };

    let commands = complete(&["a"]);
    assert_eq!(commands, ["ack", "attach"], "{commands:?}");
    let outputs = complete(&["ps", "-o", ""]);
    assert_eq!(outputs, ["wide", "name", "json", "yaml", "jsonpath="]);
    // Agent names come from the namespace typed on the line.
    let agents = complete(&["logs", "-n", &ns.name, ""]);
    for name in ["builder", "reviewer", "scout"] {
        assert!(agents.contains(&name.to_string()), "{agents:?}");
    }
    let narrowed = complete(&["attach", "--namespace", &ns.name, "re"]);
    assert_eq!(narrowed, ["reviewer"]);
    let _ = std::fs::remove_dir_all(bin);
}

/// `peek`, `logs` and `attach` read only the pod the operator made for the agent: a pod
/// under the name the agent's attempt gives, made by someone else, is refused.
#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn peek_logs_and_attach_refuse_a_pod_the_operator_did_not_make() {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, Patch, PatchParams, PostParams};
    let ns = setup("cli-foreign-pod").await;
    // No operator runs here: the agent's status says attempt 1, and the pod of that name
    // is somebody else's, labelled as if it were the agent's.
    create_agent(&ns, "ghost", json!({"suspend": true})).await;
    let agents: Api<overseer::agent::Agent> = ns.api();
    agents
        .patch_status(
            "ghost",
            &PatchParams::apply("test").force(),
            &Patch::Apply(
                json!({"apiVersion": "overseer.dev/v1alpha1", "kind": "Agent",
                "status": {"attempt": 1}}),
            ),
        )
        .await
        .unwrap();
    let pods: Api<Pod> = ns.api();
    let forged = serde_json::from_value(json!({"metadata": {"name": "ghost-1",
        "labels": {"overseer.dev/agent": "ghost", "overseer.dev/attempt": "1"}},
        "spec": {"containers": [{"name": "agent", "image": "example.com/theirs:1"}]}}))
    .unwrap();
    pods.create(&PostParams::default(), &forged).await.unwrap();
    let kubeconfig = kubeconfig_path();
    for command in [
        &["peek", "ghost"][..],
        &["logs", "ghost"],
        &["attach", "ghost"],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_overseer"))
            .args(command)
            .args(["--namespace", &ns.name])
            .env("KUBECONFIG", &kubeconfig)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{command:?} ran: {stderr}");
        assert!(
            stderr.contains("pod ghost-1 is not the operator's pod of agent ghost"),
            "{command:?}: {stderr}"
        );
    }
}
