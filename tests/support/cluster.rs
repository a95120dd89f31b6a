//! Test support against the real local control plane (`make cluster`): a client from
//! its kubeconfig, a fresh namespace per test, the CRDs installed from `crds/`, the
//! operator as a subprocess, and waits that dump what they watched when they time out.

use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Namespace, Node};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The test cluster's kubeconfig: `OVERSEER_TEST_KUBECONFIG`, else `.cluster/kubeconfig`.
/// Tests never use the current context, so they cannot touch a real cluster by accident.
pub fn kubeconfig_path() -> PathBuf {
    std::env::var_os("OVERSEER_TEST_KUBECONFIG")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".cluster/kubeconfig"))
}

fn no_cluster(why: String) -> ! {
    panic!(
        "no test cluster reachable through {} ({why}): bring it up with `make cluster`, or run everything with `make test`",
        kubeconfig_path().display()
    )
}

/// A client of the test cluster, not yet asked whether the cluster answers.
async fn unchecked_client() -> Client {
    let kubeconfig =
        Kubeconfig::read_from(kubeconfig_path()).unwrap_or_else(|e| no_cluster(e.to_string()));
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap_or_else(|e| no_cluster(e.to_string()));
    Client::try_from(config).unwrap_or_else(|e| no_cluster(e.to_string()))
}

/// A client of the test cluster; fails the test with a clear message when it is not up.
pub async fn client() -> Client {
    let client = unchecked_client().await;
    match tokio::time::timeout(Duration::from_secs(10), client.apiserver_version()).await {
        Ok(Ok(_)) => client,
        Ok(Err(e)) => no_cluster(e.to_string()),
        Err(_) => no_cluster("the API server did not answer in 10s".into()),
    }
}

/// Server-side applies every CRD in `crds/` and waits until each is Established.
pub async fn install_crds(client: &Client) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply("overseer-tests").force();
    for crd in overseer::crd::all() {
        let name = crd.metadata.name.clone().unwrap();
        api.patch(&name, &params, &Patch::Apply(&crd))
            .await
            .expect("apply CRD");
    }
    for crd in overseer::crd::all() {
        let name = crd.metadata.name.clone().unwrap();
        wait_until(
            &format!("CRD {name} established"),
            Duration::from_secs(30),
            || {
                let api = api.clone();
                let name = name.clone();
                async move {
                    let crd = api.get(&name).await.ok()?;
                    let established = crd
                        .status?
                        .conditions?
                        .iter()
                        .any(|c| c.type_ == "Established" && c.status == "True");
                    established.then_some(())
                }
            },
        )
        .await;
    }
}

/// The usual start of a cluster test: the CRDs installed and a fresh namespace.
pub async fn setup(test: &str) -> TestNamespace {
    let client = client().await;
    install_crds(&client).await;
    TestNamespace::new(&client, test).await
}

/// A namespaced kind the tests create from JSON or YAML.
pub trait Namespaced:
    kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
    + Clone
    + serde::de::DeserializeOwned
    + serde::Serialize
    + std::fmt::Debug
{
}

impl<K> Namespaced for K where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug
{
}

/// Creates `object` (JSON of a namespaced kind) in `ns`.
pub async fn create_object<K: Namespaced>(ns: &TestNamespace, object: serde_json::Value) -> K {
    let object: K = serde_json::from_value(object).expect("test object JSON");
    ns.api::<K>()
        .create(&PostParams::default(), &object)
        .await
        .expect("create test object")
}

/// Creates a Goal of one `Implement` step per name, run headless by a codex image.
pub async fn create_simple_goal(ns: &TestNamespace, name: &str, steps: &[&str]) {
    let steps: Vec<_> = steps
        .iter()
        .map(|s| serde_json::json!({"name": s, "action": format!("Implement {s}")}))
        .collect();
    create_object::<overseer::goal::Goal>(
        ns,
        serde_json::json!({
            "apiVersion": "overseer.dev/v1alpha1", "kind": "Goal", "metadata": {"name": name},
            "spec": {"defaults": {"runtime": {"name": "codex", "image": "example.com/codex:1"}}, "steps": steps}
        }),
    )
    .await;
}

/// Creates Agent `name`: a builder on the pi runtime, with `spec`'s top-level fields
/// replacing those.
pub async fn create_agent(ns: &TestNamespace, name: &str, spec: serde_json::Value) {
    let mut full = serde_json::json!({"role": "builder", "runtime": {"name": "pi", "image": "example.com/pi:1"}});
    full.as_object_mut()
        .unwrap()
        .extend(spec.as_object().unwrap().clone());
    let agent: overseer::agent::Agent = serde_json::from_value(serde_json::json!({
        "apiVersion": "overseer.dev/v1alpha1", "kind": "Agent",
        "metadata": {"name": name}, "spec": full
    }))
    .unwrap();
    ns.api::<overseer::agent::Agent>()
        .create(&PostParams::default(), &agent)
        .await
        .expect("create agent");
}

/// A namespace of one test, deleted when the test ends (also when it panics).
pub struct TestNamespace {
    pub name: String,
    pub client: Client,
}

impl TestNamespace {
    pub async fn new(client: &Client, test: &str) -> TestNamespace {
        let suffix: u32 = rand_suffix();
        let name = format!(
            "t-{}-{suffix:08x}",
            test.replace('_', "-").chars().take(40).collect::<String>()
        );
        let api: Api<Namespace> = Api::all(client.clone());
        let ns: Namespace = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "labels": {"overseer.dev/test": "true"}}
        }))
        .unwrap();
        api.create(&PostParams::default(), &ns)
            .await
            .expect("create test namespace");
        TestNamespace {
            name,
            client: client.clone(),
        }
    }

    pub fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.name)
    }

    /// The objects and events of this namespace, for failure messages.
    /// The last lines each container of the namespace's pods wrote (an agent's mirror
    /// its screen there); none where nothing serves logs (kwok's nodes).
    async fn container_log_tails(&self) -> String {
        const LINES: i64 = 80;
        let pods: Api<k8s_openapi::api::core::v1::Pod> = self.api();
        let mut out = String::new();
        let Ok(list) = pods.list(&ListParams::default()).await else {
            return out;
        };
        for pod in list {
            let name = pod.metadata.name.clone().unwrap_or_default();
            let containers = pod.spec.map(|s| s.containers).unwrap_or_default();
            for container in containers {
                let params = kube::api::LogParams {
                    container: Some(container.name.clone()),
                    tail_lines: Some(LINES),
                    ..Default::default()
                };
                let logs = tokio::time::timeout(
                    std::time::Duration::from_secs(5),
                    pods.logs(&name, &params),
                )
                .await;
                if let Ok(Ok(text)) = logs {
                    out.push_str(&format!(
                        "log {name}/{} (last {LINES} lines):\n{text}\n",
                        container.name
                    ));
                }
            }
        }
        out
    }

    pub async fn dump(&self) -> String {
        let mut out = nodes_taking_no_pods(&self.client).await;
        out.push_str(&format!("--- namespace {} ---\n", self.name));
        let events: Api<Event> = self.api();
        if let Ok(list) = events.list(&ListParams::default()).await {
            for e in list {
                out.push_str(&format!(
                    "event {} {}: {} {}\n",
                    e.involved_object.name.unwrap_or_default(),
                    e.type_.unwrap_or_default(),
                    e.reason.unwrap_or_default(),
                    e.message.unwrap_or_default()
                ));
            }
        }
        out.push_str(&self.container_log_tails().await);
        for (group, version, kind, plural) in [
            ("", "v1", "Pod", "pods"),
            ("overseer.dev", "v1alpha1", "Agent", "agents"),
            ("overseer.dev", "v1alpha1", "Goal", "goals"),
            ("overseer.dev", "v1alpha1", "PRWatch", "prwatches"),
            ("overseer.dev", "v1alpha1", "Swarm", "swarms"),
        ] {
            let gvk = kube::api::GroupVersionKind::gvk(group, version, kind);
            let resource = kube::api::ApiResource::from_gvk_with_plural(&gvk, plural);
            let api: Api<DynamicObject> =
                Api::namespaced_with(self.client.clone(), &self.name, &resource);
            if let Ok(list) = api.list(&ListParams::default()).await {
                for mut object in list {
                    object.metadata.managed_fields = None;
                    out.push_str(&format!(
                        "{kind}:\n{}\n",
                        serde_saphyr::to_string(&object).unwrap_or_default()
                    ));
                }
            }
        }
        out
    }
}

/// The nodes that are not Ready or carry a taint of the kubelet's (`node.kubernetes.io/…`,
/// such as disk-pressure), with their failing conditions: why pods stay Pending.
async fn nodes_taking_no_pods(client: &Client) -> String {
    let Ok(nodes) = Api::<Node>::all(client.clone())
        .list(&ListParams::default())
        .await
    else {
        return String::new();
    };
    let mut out = String::new();
    for node in nodes {
        let status = node.status.unwrap_or_default();
        let conditions = status.conditions.unwrap_or_default();
        let failing: Vec<String> = conditions
            .iter()
            .filter(|c| (c.type_ == "Ready") != (c.status == "True"))
            .map(|c| {
                format!(
                    "{}={} {}",
                    c.type_,
                    c.status,
                    c.message.as_deref().unwrap_or("")
                )
            })
            .collect();
        let taints: Vec<String> = (node.spec.unwrap_or_default().taints.unwrap_or_default())
            .into_iter()
            .filter(|t| t.key.starts_with("node.kubernetes.io/"))
            .map(|t| t.key)
            .collect();
        if !failing.is_empty() || !taints.is_empty() {
            let name = node.metadata.name.unwrap_or_default();
            out.push_str(&format!(
                "node {name} takes no pods: taints {taints:?}, {failing:?}\n"
            ));
        }
    }
    out
}

impl Drop for TestNamespace {
    fn drop(&mut self) {
        let name = self.name.clone();
        // Drop cannot await: delete from a thread with a runtime and a client of its own
        // (the test's client is driven by the test's runtime, which this call blocks).
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let api: Api<Namespace> = Api::all(client().await);
                let _ = api.delete(&name, &DeleteParams::background()).await;
            });
        })
        .join();
    }
}

fn rand_suffix() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos(),
    );
    hasher.finish() as u32
}

/// Polls `check` every 100 ms until it yields a value, or None after `timeout`.
async fn poll<T, F, Fut>(timeout: Duration, mut check: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return Some(value);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Polls `check` until it yields a value; panics with `what` after `timeout`.
pub async fn wait_until<T, F, Fut>(what: &str, timeout: Duration, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    match poll(timeout, check).await {
        Some(value) => value,
        None => panic!("timed out after {timeout:?} waiting for {what}"),
    }
}

/// Like `wait_until`, but dumps the namespace's objects and events on timeout.
pub async fn wait_in<T, F, Fut>(ns: &TestNamespace, what: &str, timeout: Duration, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    match poll(timeout, check).await {
        Some(value) => value,
        None => panic!(
            "timed out after {timeout:?} waiting for {what}\n{}",
            ns.dump().await
        ),
    }
}

/// A pinned tool linked into `.cluster/bin` (kubectl, helm), else the one on PATH
/// (a cluster of its own, such as kind in CI).
pub fn tool(name: &str) -> PathBuf {
    let pinned = repo_root().join(".cluster/bin").join(name);
    if pinned.exists() {
        pinned
    } else {
        PathBuf::from(name)
    }
}

/// Runs the pinned kubectl against the test cluster, feeding `stdin`.
pub fn kubectl(args: &[&str], stdin: &str) -> std::process::Output {
    use std::io::Write;
    let mut child = Command::new(tool("kubectl"))
        .arg("--kubeconfig")
        .arg(kubeconfig_path())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start kubectl");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// `overseer run` as a subprocess against the test cluster; killed when dropped.
pub struct Operator {
    pub child: Child,
    pub metrics_addr: String,
    /// Where the operator's log is written.
    pub log_path: PathBuf,
}

impl Operator {
    pub fn start(args: &[&str]) -> Operator {
        Operator::start_with_kubeconfig(&kubeconfig_path(), args)
    }

    /// Runs with another identity, for example a ServiceAccount's token.
    pub fn start_with_kubeconfig(kubeconfig: &std::path::Path, args: &[&str]) -> Operator {
        Operator::start_with_env(kubeconfig, args, &[])
    }

    /// With extra environment, for example the crash-injection test mode.
    pub fn start_with_env(
        kubeconfig: &std::path::Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Operator {
        let port = free_port();
        let metrics_addr = format!("127.0.0.1:{port}");
        // The operator's log goes to a file (a pipe nobody reads would fill and block it).
        let log_dir = repo_root().join("target/test-logs");
        std::fs::create_dir_all(&log_dir).unwrap();
        let log_path = log_dir.join(format!("operator-{port}.log"));
        let log = std::fs::File::create(&log_path).expect("operator log file");
        let child = Command::new(operator_binary())
            .arg("run")
            .args(["--metrics-addr", &metrics_addr])
            .args(args)
            .env("KUBECONFIG", kubeconfig)
            .env("RUST_LOG", "info,overseer=debug")
            // The stand-in for GitHub (tests/support/github.rs) listens on loopback.
            .env(
                "OVERSEER_GITHUB_API_ORIGINS",
                "https://api.github.com,http://127.0.0.1",
            )
            // The suite's webhook receivers (tests/support/webhook.rs) listen on loopback,
            // which the operator refuses by default.
            .env("OVERSEER_NOTIFY_ALLOWED_CIDRS", "127.0.0.0/8")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start overseer run");
        Operator {
            child,
            metrics_addr,
            log_path,
        }
    }

    /// The body of /metrics, or None while the server does not answer.
    pub async fn metrics(&self) -> Option<String> {
        http_get(&self.metrics_addr, "/metrics").await
    }
}

/// The operator binary the tests and benchmarks start: cargo's build of this crate, or
/// `OVERSEER_OPERATOR_BIN` (a benchmark of the image's static musl build, which has
/// another allocator than the host's glibc build).
fn operator_binary() -> String {
    std::env::var("OVERSEER_OPERATOR_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_overseer").into())
}

/// The user name of agent `agent`'s own ServiceAccount.
/// An `overseer` CLI command run as `user` (None: the test's admin).
pub fn overseer_as(ns: &TestNamespace, user: Option<&str>, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_overseer"));
    command
        .args(args)
        .env("KUBECONFIG", kubeconfig_path())
        .env("OVERSEER_NAMESPACE", &ns.name)
        .env_remove("OVERSEER_AGENT")
        .stdin(Stdio::null());
    if let Some(user) = user {
        command.env("KUBE_RS_DEBUG_IMPERSONATE_USER", user);
    }
    command.output().expect("run overseer")
}

/// What a command said, its exit code first, for an assertion's message.
pub fn said(output: &Output) -> String {
    format!(
        "exit {:?}\n{}{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

pub fn agent_account(ns: &TestNamespace, agent: &str) -> String {
    format!("system:serviceaccount:{}:overseer-agent-{agent}", ns.name)
}

/// What the API server's own authorizer answers ("yes" or "no") when `user` asks to
/// `verb` `resource` (and `sub`resource) in the namespace: `kubectl auth can-i`, which
/// is a SubjectAccessReview.
pub fn can_i(
    ns: &TestNamespace,
    user: &str,
    verb: &str,
    resource: &str,
    sub: Option<&str>,
) -> String {
    let mut args = vec![
        "auth", "can-i", verb, resource, "-n", &ns.name, "--as", user,
    ];
    if let Some(sub) = sub {
        args.extend(["--subresource", sub]);
    }
    String::from_utf8_lossy(&kubectl(&args, "").stdout)
        .trim()
        .to_string()
}

/// The operator scoped to `ns`, its exec input running this build's `overseer` (kwok
/// runs exec on this machine, against the shims that stand in for agent pods).
pub fn operator(ns: &TestNamespace) -> Operator {
    Operator::start(&[
        "--namespace",
        &ns.name,
        "--input-command",
        env!("CARGO_BIN_EXE_overseer"),
    ])
}

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A minimal HTTP/1.0 GET, enough for the operator's health and metrics endpoints.
pub async fn http_get(addr: &str, path: &str) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await
        .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await.ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    (head.split(' ').nth(1) == Some("200")).then(|| body.to_string())
}

/// A process of the local control plane, as /proc shows it.
struct ControlPlaneProcess {
    pid: u32,
    argv: Vec<String>,
    cwd: PathBuf,
    env: Vec<(String, String)>,
    log: PathBuf,
}

/// The local control plane's process whose program is `program` (`.cluster/kwok`'s
/// paths are in its flags); panics when the test cluster is not the local one.
fn control_plane_process(program: &str) -> ControlPlaneProcess {
    let workdir = repo_root().join(".cluster/kwok");
    let workdir = workdir.to_string_lossy();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let argv: Vec<String> = cmdline
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let ours = argv
            .first()
            .is_some_and(|a| a.ends_with(&format!("/{program}")))
            && argv.iter().any(|a| a.contains(workdir.as_ref()));
        if !ours {
            continue;
        }
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        let env = environ
            .split(|b| *b == 0)
            .filter_map(|pair| {
                let pair = String::from_utf8_lossy(pair);
                let (key, value) = pair.split_once('=')?;
                Some((key.to_string(), value.to_string()))
            })
            .collect();
        return ControlPlaneProcess {
            pid,
            argv,
            cwd: std::fs::read_link(entry.path().join("cwd")).unwrap(),
            env,
            log: std::fs::read_link(entry.path().join("fd/2")).unwrap(),
        };
    }
    panic!(
        "no {program} of the local control plane ({workdir}) is running: `make cluster` brings it up"
    )
}

/// Restarts the local control plane's API server: stops it (SIGTERM, and SIGKILL after
/// a 5 s grace, so that its connections are cut rather than drained for a minute) and
/// starts it again with the same flags; etcd keeps every object. The scheduler and the
/// controller-manager exit when they cannot renew their own leases meanwhile; they are
/// started again as the kubelet would restart static pods. Returns once the API server
/// answers /readyz again, with how long it was away. Every client of the cluster sees
/// the outage, so tests that call this run alone (`make test` runs them after the
/// others).
pub async fn restart_api_server() -> Duration {
    let api_server = control_plane_process("kube-apiserver");
    let supervised = ["kube-scheduler", "kube-controller-manager"].map(control_plane_process);
    let stopped = std::time::Instant::now();
    signal(api_server.pid, "-TERM");
    let grace = stopped + Duration::from_secs(5);
    while alive(api_server.pid) {
        if std::time::Instant::now() > grace {
            signal(api_server.pid, "-KILL");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    start_again(&api_server);
    let client = unchecked_client().await;
    wait_until(
        "the restarted API server is ready",
        Duration::from_secs(120),
        || {
            let client = client.clone();
            async move {
                let request = http::Request::get("/readyz").body(Vec::new()).ok()?;
                let answer =
                    tokio::time::timeout(Duration::from_secs(2), client.request_text(request));
                answer.await.ok()?.ok().map(|_| ())
            }
        },
    )
    .await;
    // One whose lease ran out just as the API server came back exits a little later.
    let mut supervised = supervised;
    tokio::spawn(async move {
        for _ in 0..40 {
            for process in &mut supervised {
                if !alive(process.pid) {
                    process.pid = start_again(process);
                }
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    });
    stopped.elapsed()
}

fn signal(pid: u32, signal: &str) {
    let _ = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status();
}

fn alive(pid: u32) -> bool {
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    proc_dir.exists() && !zombie(&proc_dir)
}

/// Starts `process` again as it ran, logging where it logged, and points kwokctl's pid
/// file at the new one (kwokctl stops the cluster by those pids); returns its pid.
fn start_again(process: &ControlPlaneProcess) -> u32 {
    let log = std::fs::OpenOptions::new()
        .append(true)
        .open(&process.log)
        .unwrap();
    #[expect(
        clippy::zombie_processes,
        reason = "the process outlives the test, as the one it replaces; `cluster.sh down` stops it"
    )]
    let new = Command::new(&process.argv[0])
        .args(&process.argv[1..])
        .current_dir(&process.cwd)
        .env_clear()
        .envs(process.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        // Not in the test's process group: it outlives the test.
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("start {} again: {e}", process.argv[0]));
    let pids = repo_root().join(".cluster/kwok/clusters/overseer/pids");
    for entry in std::fs::read_dir(&pids).into_iter().flatten().flatten() {
        let written = std::fs::read_to_string(entry.path()).unwrap_or_default();
        if written.trim() == process.pid.to_string() {
            std::fs::write(entry.path(), new.id().to_string()).unwrap();
        }
    }
    new.id()
}

fn zombie(proc_dir: &std::path::Path) -> bool {
    std::fs::read_to_string(proc_dir.join("stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|s| s.trim_start().starts_with('Z'))
    })
}
