//! `overseer shim` as a local process, standing in for an agent pod's container:
//! real tmux, real child processes, the scripted fake agent CLIs of tests/fake-agents/.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use kube::api::{Api, DynamicObject, PostParams};
use overseer::agent::{Activity, ActivityState};
use overseer::shim::protocol::{Request, request};
use serde_json::json;

use super::cluster::TestNamespace;

pub fn tmux_present() {
    let found = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "tmux is needed by the shim tests: install it (`bash hack/testenv/packages.sh`) or run `make test`"
    );
}

pub struct Shim {
    child: Child,
    pub dir: PathBuf,
}

impl Shim {
    /// `overseer shim` running `script` (with `args`) under `runtime`/`mode`, idle after 1s of quiet.
    pub fn start(
        test: &str,
        mode: &str,
        runtime: &str,
        script: &str,
        env: &[(&str, &str)],
    ) -> Shim {
        Shim::start_with(test, mode, runtime, script, env, &["--interval", "off"])
    }

    /// The working directory of `test`'s shim (unique to this test process), which a
    /// test may fill before it starts the shim, as a repository fills /workspace.
    pub fn workspace(test: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("target/test-shim")
            .join(format!("{test}-{}", std::process::id()))
    }

    /// As `start`, with more `overseer shim` arguments (for example `--agent`).
    pub fn start_with(
        test: &str,
        mode: &str,
        runtime: &str,
        script: &str,
        env: &[(&str, &str)],
        args: &[&str],
    ) -> Shim {
        tmux_present();
        let dir = Shim::workspace(test);
        std::fs::create_dir_all(&dir).unwrap();
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fake-agents")
            .join(script);
        let log = std::fs::File::create(dir.join("shim.log")).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_overseer"))
            .args([
                "shim",
                "--mode",
                mode,
                "--runtime",
                runtime,
                "--quiet",
                "1s",
            ])
            .args(args)
            .arg("--socket")
            .arg(dir.join("input.sock"))
            .arg("--")
            .arg(script)
            .env_remove("OVERSEER_AGENT")
            // The shim's own directory is its working directory, as /workspace in a pod,
            // and its home: the first-run state the shim seeds stays in the test's own.
            .current_dir(&dir)
            .env("HOME", &dir)
            .env_remove("CODEX_HOME")
            .env("FAKE_LOG", dir.join("fake.log"))
            .env("FAKE_DIR", &dir)
            // What the fake CLIs call, as the agent in a pod calls /overseer/bin/overseer.
            .env("OVERSEER_BIN", env!("CARGO_BIN_EXE_overseer"))
            .env("OVERSEER_INPUT_SOCKET", dir.join("input.sock"))
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("start overseer shim");
        let mut child = child;
        let stdout = child.stdout.take().unwrap();
        let container_log = dir.join("container.log");
        std::thread::spawn(move || write_container_log(stdout, &container_log));
        Shim { child, dir }
    }

    /// The container log as the kubelet would keep it (CRI format), which kwok serves
    /// to `kubectl logs` for the pod this shim stands in for.
    pub fn container_log(&self) -> PathBuf {
        self.dir.join("container.log")
    }

    pub fn socket(&self) -> PathBuf {
        self.dir.join("input.sock")
    }

    /// What the fake agent recorded (its arguments and the lines it read).
    pub fn fake_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("fake.log")).unwrap_or_default()
    }

    pub async fn activity(&self) -> Option<Activity> {
        request(&self.socket(), &Request::Status, Duration::from_secs(5))
            .await
            .ok()?
            .activity
    }

    /// The fake CLI's log once it holds `text` (within 15 s).
    pub async fn wait_for_log(&self, text: &str) -> String {
        self.wait_for_log_within(text, Duration::from_secs(15))
            .await
    }

    /// The fake CLI's log once it holds `text` (within `wait`).
    pub async fn wait_for_log_within(&self, text: &str, wait: Duration) -> String {
        for _ in 0..wait.as_millis() / 100 {
            let log = self.fake_log();
            if log.contains(text) {
                return log;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "the fake CLI never logged {text:?}; its log: {:?}\nshim log:\n{}",
            self.fake_log(),
            std::fs::read_to_string(self.dir.join("shim.log")).unwrap_or_default()
        );
    }

    pub async fn wait_for(&self, state: ActivityState) -> Activity {
        let mut last = None;
        for _ in 0..150 {
            if let Some(activity) = self.activity().await {
                if activity.state == state {
                    return activity;
                }
                last = Some(activity);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "the shim never reported {state:?}; last: {last:?}\nshim log:\n{}",
            std::fs::read_to_string(self.dir.join("shim.log")).unwrap_or_default()
        );
    }

    /// `overseer input --bytes N` with `message` on stdin, as the operator's exec runs it.
    pub fn input(&self, message: &str) -> Output {
        input(&self.socket(), message)
    }

    /// As `input`, naming what it delivers (`--id`, as the operator's exec does).
    pub fn input_with_ids(&self, message: &str, ids: &[&str]) -> Output {
        input_with_ids(&self.socket(), message, ids)
    }

    /// `overseer input --confirm`: whether the shim delivered every one of `ids`.
    pub fn confirms(&self, ids: &[&str]) -> bool {
        Command::new(env!("CARGO_BIN_EXE_overseer"))
            .args(["input", "--confirm"])
            .args(ids.iter().flat_map(|id| ["--id", id]))
            .arg("--socket")
            .arg(self.socket())
            .stdin(Stdio::null())
            .output()
            .unwrap()
            .status
            .success()
    }
}

/// Copies the shim's stdout (the mirrored agent output) into a CRI log file.
fn write_container_log(stdout: std::process::ChildStdout, path: &Path) {
    use std::io::{BufRead, Write};
    let Ok(mut file) = std::fs::File::create(path) else {
        return;
    };
    for line in std::io::BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        let _ = writeln!(file, "{} stdout F {line}", jiff::Timestamp::now());
        let _ = file.flush();
    }
}

pub fn input(socket: &Path, message: &str) -> Output {
    input_with_ids(socket, message, &[])
}

pub fn input_with_ids(socket: &Path, message: &str, ids: &[&str]) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_overseer"))
        .args(["input", "--bytes", &message.len().to_string()])
        .args(ids.iter().flat_map(|id| ["--id", id]))
        .arg("--socket")
        .arg(socket)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Like kwok's exec, keep stdin open: the length frames the message.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(message.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    drop(stdin);
    output
}

impl Drop for Shim {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        for _ in 0..50 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(self.dir.join("tmux.sock"))
            .arg("kill-server")
            .output();
    }
}

/// Routes `kubectl exec` into `pod` to the local shim's socket (a kwok `Exec`).
pub async fn route_exec(ns: &TestNamespace, pod: &str, shim: &Shim) {
    route_exec_to(ns, pod, &shim.socket()).await;
}

/// Routes `kubectl exec` into `pod` to a local `overseer input` reaching `socket`.
pub async fn route_exec_to(ns: &TestNamespace, pod: &str, socket: &Path) {
    let gvk = kube::api::GroupVersionKind::gvk("kwok.x-k8s.io", "v1alpha1", "Exec");
    let resource = kube::api::ApiResource::from_gvk_with_plural(&gvk, "execs");
    let api: Api<DynamicObject> = Api::namespaced_with(ns.client.clone(), &ns.name, &resource);
    let exec: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Exec",
        "metadata": {"name": pod},
        "spec": {"execs": [{"local": {"workDir": "/tmp", "envs": [
            {"name": "OVERSEER_INPUT_SOCKET", "value": socket.display().to_string()}
        ]}}]}
    }))
    .unwrap();
    api.create(&PostParams::default(), &exec)
        .await
        .expect("create kwok Exec");
}

/// Waits until kwok runs `pod`'s execs with `socket` as the shim's input socket. kwok
/// learns of an `Exec` through a watch, which may lag (after the API server restarts
/// that run before the tests run alone): an exec made earlier runs without the route.
pub async fn wait_exec_routed(ns: &TestNamespace, pod: &str, socket: &Path) {
    use tokio::io::AsyncReadExt;
    let pods: Api<k8s_openapi::api::core::v1::Pod> = ns.api();
    let want = socket.display().to_string();
    super::cluster::wait_in(
        ns,
        "kwok routing the exec",
        Duration::from_secs(60),
        || async {
            let params = kube::api::AttachParams::default().stderr(false);
            let mut process = pods
                .exec(pod, ["printenv", "OVERSEER_INPUT_SOCKET"], &params)
                .await
                .ok()?;
            let mut printed = String::new();
            process.stdout()?.read_to_string(&mut printed).await.ok()?;
            (printed.trim() == want).then_some(())
        },
    )
    .await;
}

/// Serves `kubectl logs` of `pod` from the local shim's container log (a kwok `Logs`).
pub async fn route_logs(ns: &TestNamespace, pod: &str, shim: &Shim) {
    let gvk = kube::api::GroupVersionKind::gvk("kwok.x-k8s.io", "v1alpha1", "Logs");
    let resource = kube::api::ApiResource::from_gvk_with_plural(&gvk, "logs");
    let api: Api<DynamicObject> = Api::namespaced_with(ns.client.clone(), &ns.name, &resource);
    let logs: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Logs",
        "metadata": {"name": pod},
        "spec": {"logs": [{"containers": ["agent"],
            "logsFile": shim.container_log().display().to_string()}]}
    }))
    .unwrap();
    api.create(&PostParams::default(), &logs)
        .await
        .expect("create kwok Logs");
}

/// The epoch-second stamps a fake CLI logged on its lines that start with `prefix`.
pub fn stamps(log: &str, prefix: &str) -> Vec<f64> {
    log.lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .filter_map(|t| t.trim().parse().ok())
        .collect()
}

/// The shim of `agent`'s pod of `attempt`, reporting to the Agent, reachable by exec.
pub async fn pod_shim(
    ns: &TestNamespace,
    agent: &str,
    attempt: i64,
    runtime: &str,
    script: &str,
) -> Shim {
    pod_shim_with(ns, agent, attempt, runtime, script, &[], "2s").await
}

/// The shim of overseer `agent`'s first pod, running the scripted overseer CLI
/// (tests/fake-agents/tui-overseer.sh), whose `overseer` commands act as the agent's
/// own ServiceAccount (impersonated), so they have exactly its permissions.
pub async fn overseer_shim(ns: &TestNamespace, agent: &str) -> Shim {
    overseer_shim_running(ns, agent, "tui-overseer.sh").await
}

/// As `overseer_shim`, running the scripted overseer CLI `script`.
pub async fn overseer_shim_running(ns: &TestNamespace, agent: &str, script: &str) -> Shim {
    let user = super::cluster::agent_account(ns, agent);
    pod_shim_with(
        ns,
        agent,
        1,
        "pi",
        script,
        &[("KUBE_RS_DEBUG_IMPERSONATE_USER", user.as_str())],
        "2s",
    )
    .await
}

/// As `pod_shim`, with more environment for the shim and the fake CLI, and the
/// shim's heartbeat `interval` (a pod gets its Agent's `loop.interval`).
pub async fn pod_shim_with(
    ns: &TestNamespace,
    agent: &str,
    attempt: i64,
    runtime: &str,
    script: &str,
    env: &[(&str, &str)],
    interval: &str,
) -> Shim {
    let test = format!("{}-{agent}", ns.name);
    let attempt = attempt.to_string();
    let kubeconfig = super::cluster::kubeconfig_path();
    let mut all_env = vec![
        ("KUBECONFIG", kubeconfig.to_str().unwrap()),
        ("OVERSEER_NAMESPACE", ns.name.as_str()),
        // As in the pod: the CLI inside knows which agent it runs as.
        ("OVERSEER_AGENT", agent),
    ];
    all_env.extend_from_slice(env);
    let shim = Shim::start_with(
        &test,
        "tui",
        runtime,
        script,
        &all_env,
        &[
            "--agent",
            agent,
            "--namespace",
            &ns.name,
            "--attempt",
            &attempt,
            "--interval",
            interval,
        ],
    );
    route_exec(ns, &format!("{agent}-{attempt}"), &shim).await;
    route_logs(ns, &format!("{agent}-{attempt}"), &shim).await;
    shim
}
