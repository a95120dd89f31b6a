//! What a benchmark reads of a process (Linux /proc), of the operator's /metrics, and of
//! the writes the API server makes (counted from watch events).

/// User and system CPU time so far of the process or thread whose /proc directory is
/// `proc_dir` (`/proc/PID` or `/proc/PID/task/TID`).
pub fn cpu_seconds_of(proc_dir: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("{proc_dir}/stat")).unwrap_or_default();
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks: f64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i)?.parse::<f64>().ok())
        .sum();
    // USER_HZ is 100 on Linux.
    ticks / 100.0
}

/// User and system CPU time of process `pid` so far.
pub fn cpu_seconds(pid: u32) -> f64 {
    cpu_seconds_of(&format!("/proc/{pid}"))
}

/// The resident set of process `pid`, in MiB.
pub fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}

/// The sum of the samples of `metric` whose line starts so, from the operator's /metrics.
pub fn sum_of(metrics: &str, metric: &str) -> f64 {
    metrics
        .lines()
        .filter(|l| l.starts_with(metric))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        // Not `sum()`: an empty f64 sum is -0.0, printed "-0".
        .fold(0.0, |total, value| total + value)
}

/// Creates `goals` Goals named `{prefix}{i}` of `steps` steps each (codex, a fake
/// image), 32 at a time, as the scale benchmarks start them.
pub async fn create_goals(
    api: &kube::Api<overseer::goal::Goal>,
    prefix: &str,
    goals: usize,
    steps: usize,
) {
    use futures::StreamExt;
    let steps: Vec<_> = (0..steps)
        .map(|s| serde_json::json!({"name": format!("s{s}"), "action": "Implement it"}))
        .collect();
    futures::stream::iter(0..goals)
        .for_each_concurrent(32, |i| {
            let goal: overseer::goal::Goal = serde_json::from_value(serde_json::json!({
                "apiVersion": "overseer.dev/v1alpha1", "kind": "Goal",
                "metadata": {"name": format!("{prefix}{i}")},
                "spec": {"defaults": {"runtime": {"name": "codex", "image": "example.com/codex:1"}},
                         "steps": steps}
            }))
            .unwrap();
            async move {
                api.create(&kube::api::PostParams::default(), &goal)
                    .await
                    .expect("create goal");
            }
        })
        .await;
}

/// Write requests the API server has served so far (`apiserver_request_total` of every
/// verb that writes, whatever the response), keyed `resource[/subresource] VERB`: a
/// count no client can get wrong about itself.
pub async fn api_server_writes(client: &kube::Client) -> std::collections::BTreeMap<String, f64> {
    series_by_verb(client, "apiserver_request_total{", &WRITES).await
}

/// The verbs that write, as the API server's metrics name them.
const WRITES: [&str; 6] = [
    "POST",
    "PUT",
    "PATCH",
    "APPLY",
    "DELETE",
    "DELETECOLLECTION",
];

/// The seconds the API server has spent serving those writes so far
/// (`apiserver_request_duration_seconds_sum`), keyed as `api_server_writes`.
pub async fn api_server_write_seconds(
    client: &kube::Client,
) -> std::collections::BTreeMap<String, f64> {
    series_by_verb(client, "apiserver_request_duration_seconds_sum{", &WRITES).await
}

/// Gets and lists the API server has served so far, by every client, keyed as
/// `api_server_writes` (`GET`, `LIST`; watches left out).
pub async fn api_server_reads(client: &kube::Client) -> std::collections::BTreeMap<String, f64> {
    series_by_verb(client, "apiserver_request_total{", &["GET", "LIST"]).await
}

/// The API server's series `metric` (its name and `{`) summed over `verbs`, keyed
/// `resource[/subresource] VERB`.
async fn series_by_verb(
    client: &kube::Client,
    metric: &str,
    verbs: &[&str],
) -> std::collections::BTreeMap<String, f64> {
    let request = http::Request::get("/metrics").body(Vec::new()).unwrap();
    let metrics = client
        .request_text(request)
        .await
        .expect("the API server's /metrics");
    let mut writes = std::collections::BTreeMap::new();
    for line in metrics.lines() {
        let Some(rest) = line.strip_prefix(metric) else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let label = |name: &str| {
            labels
                .split(',')
                .find_map(|l| l.strip_prefix(&format!("{name}=\"")))
                .map(|v| v.trim_end_matches('"'))
                .unwrap_or_default()
        };
        if !verbs.contains(&label("verb")) {
            continue;
        }
        let resource = match label("subresource") {
            "" => label("resource").to_string(),
            sub => format!("{}/{sub}", label("resource")),
        };
        let key = format!("{resource} {}", label("verb"));
        *writes.entry(key).or_insert(0.0) += value.parse::<f64>().unwrap_or(0.0);
    }
    writes
}

/// What grew from `before` to `after`, by key.
pub fn grown(
    before: &std::collections::BTreeMap<String, f64>,
    after: &std::collections::BTreeMap<String, f64>,
) -> std::collections::BTreeMap<String, f64> {
    after
        .iter()
        .map(|(key, n)| (key.clone(), n - before.get(key).copied().unwrap_or(0.0)))
        .filter(|(_, n)| *n > 0.0)
        .collect()
}

/// Every (kind/name, resourceVersion) a write counter's watches saw, with when.
pub type Seen = std::sync::Arc<std::sync::Mutex<Vec<(std::time::Instant, String, String)>>>;

/// Notes in `seen` every version of every object `api` watches, from now on.
pub fn count_writes<K>(api: kube::Api<K>, seen: Seen)
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
    K::DynamicType: Default,
{
    use futures::StreamExt;
    use kube::ResourceExt;
    use kube::runtime::watcher;
    tokio::spawn(async move {
        let mut events = watcher(api, watcher::Config::default()).boxed();
        while let Some(Ok(event)) = events.next().await {
            if let watcher::Event::Apply(object) | watcher::Event::InitApply(object) = event {
                let kind = K::kind(&K::DynamicType::default()).to_string();
                let version = object.resource_version().unwrap_or_default();
                let key = format!("{kind}/{}", object.name_any());
                seen.lock()
                    .unwrap()
                    .push((std::time::Instant::now(), key, version));
            }
        }
    });
}

/// Distinct versions seen after `from` of the objects whose `kind/name` `matches`: the
/// writes to them.
pub fn writes(seen: &Seen, from: std::time::Instant, matches: impl Fn(&str) -> bool) -> usize {
    let seen = seen.lock().unwrap();
    seen.iter()
        .filter(|(at, k, _)| *at >= from && matches(k))
        .map(|(_, k, v)| (k.clone(), v.clone()))
        .collect::<std::collections::BTreeSet<_>>()
        .len()
}
