//! The exec input path: run `overseer input --bytes N` in a pod's container with
//! the message on stdin (kube's websocket exec) and read the exit status. A
//! delivery counts only when the command succeeded, that is when the shim confirmed it.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::AttachParams;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Typing, the pause and Enter, or restarting a TUI, fit well within this.
const EXEC_TIMEOUT: Duration = Duration::from_secs(60);
/// How much of a refusal's reason is kept (it is the shim's own text).
const MAX_REASON: usize = 300;

/// Delivers `message` to the shim of `pod`; Err carries why it was not delivered.
/// `ids` name what it delivers: the shim confirms a message whose ids it has all
/// delivered before without typing it again, so a retry after a lost answer is safe.
#[tracing::instrument(skip_all, fields(pod = pod))]
pub async fn deliver(
    pods: &Api<Pod>,
    pod: &str,
    container: &str,
    overseer_bin: &str,
    message: &str,
    ids: &[String],
) -> Result<(), String> {
    let mut command = vec![
        overseer_bin.to_string(),
        "input".into(),
        "--bytes".into(),
        message.len().to_string(),
    ];
    command.extend(id_args(ids));
    run_input(pods, pod, container, command, message).await
}

/// Asks the shim of `pod` whether it delivered every one of `ids`, typing nothing;
/// Ok only when it did.
pub async fn confirm(
    pods: &Api<Pod>,
    pod: &str,
    container: &str,
    overseer_bin: &str,
    ids: &[String],
) -> Result<(), String> {
    let mut command = vec![overseer_bin.to_string(), "input".into(), "--confirm".into()];
    command.extend(id_args(ids));
    run_input(pods, pod, container, command, "").await
}

fn id_args(ids: &[String]) -> impl Iterator<Item = String> + '_ {
    ids.iter().flat_map(|id| ["--id".to_string(), id.clone()])
}

/// Runs `command` (an `overseer input`) in the container with `message` on stdin.
async fn run_input(
    pods: &Api<Pod>,
    pod: &str,
    container: &str,
    command: Vec<String>,
    message: &str,
) -> Result<(), String> {
    let exchange = async {
        let params = AttachParams::default()
            .container(container)
            .stdin(true)
            .stdout(false)
            .stderr(true);
        let mut process = pods
            .exec(pod, command, &params)
            .await
            .map_err(|e| format!("exec into {pod}: {e}"))?;
        let status = process.take_status().ok_or("exec gave no status channel")?;
        let mut stdin = process.stdin().ok_or("exec gave no stdin")?;
        stdin
            .write_all(message.as_bytes())
            .await
            .map_err(|e| format!("writing the message: {e}"))?;
        stdin
            .flush()
            .await
            .map_err(|e| format!("writing the message: {e}"))?;
        let mut stderr = process.stderr().ok_or("exec gave no stderr")?;
        let mut said = String::new();
        let _ = (&mut stderr).take(4096).read_to_string(&mut said).await;
        let status = status.await.ok_or("exec ended without a status")?;
        drop(stdin);
        if status.status.as_deref() == Some("Success") {
            Ok(())
        } else {
            let reason = said
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(str::to_string)
                .or(status.message)
                .unwrap_or_else(|| "overseer input failed".into());
            Err(reason.chars().take(MAX_REASON).collect())
        }
    };
    tokio::time::timeout(EXEC_TIMEOUT, exchange)
        .await
        .map_err(|_| format!("no answer from {pod} within {EXEC_TIMEOUT:?}"))?
}
