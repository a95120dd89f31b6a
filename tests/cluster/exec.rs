//! Exec into a simulated pod: the path the operator's nudges and wakes take.
//!
//! kwok runs the command on its host. It copies stdin into the process but never
//! closes the pipe (kwok v0.8.0 pkg/utils/exec/exec.go: `io.Copy(inPipe, opt.In)`
//! without `inPipe.Close()`), so a reader waiting for end-of-file hangs. The input path
//! must frame a message by its length (`head -c N` stands in for the reader here),
//! which works the same on a real kubelet; these tests prove that framing and the exit status.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams, PostParams};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::cluster::{TestNamespace, client, kubectl, wait_in};

async fn running_pod(ns: &TestNamespace) -> Api<Pod> {
    let pods: Api<Pod> = ns.api();
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "target"},
        "spec": {"containers": [{"name": "main", "image": "example.com/agent:1"}]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    wait_in(ns, "pod target Running", Duration::from_secs(30), || {
        let pods = pods.clone();
        async move {
            let pod = pods.get("target").await.ok()?;
            (pod.status?.phase.as_deref() == Some("Running")).then_some(())
        }
    })
    .await;
    pods
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_message_piped_into_exec_arrives_whole_and_exit_statuses_come_back() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "exec").await;
    let pods = running_pod(&ns).await;

    // Multi-line, non-ASCII, and larger than one websocket frame's worth of small writes.
    let message = format!("wake up: agents a, b\nline two ✓\n{}", "x".repeat(20_000));
    let length = message.len().to_string();
    let mut process = pods
        .exec(
            "target",
            ["head", "-c", &length],
            &AttachParams::default().stdin(true).stderr(false),
        )
        .await
        .unwrap();
    let mut stdin = process.stdin().unwrap();
    stdin.write_all(message.as_bytes()).await.unwrap();
    stdin.flush().await.unwrap();
    let mut stdout = process.stdout().unwrap();
    let mut echoed = String::new();
    tokio::time::timeout(Duration::from_secs(20), stdout.read_to_string(&mut echoed))
        .await
        .expect("exec output")
        .unwrap();
    let status = process.take_status().unwrap().await.expect("exec status");
    assert_eq!(echoed, message, "the message arrived whole");
    assert_eq!(status.status.as_deref(), Some("Success"), "{status:?}");

    let process = pods
        .exec(
            "target",
            ["sh", "-c", "exit 3"],
            &AttachParams::default().stderr(false),
        )
        .await
        .unwrap();
    let mut process = process;
    let status = process.take_status().unwrap().await.expect("exec status");
    assert_eq!(status.status.as_deref(), Some("Failure"), "{status:?}");
    assert!(
        status
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("exit status 3"),
        "exit code carried: {status:?}"
    );
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn kubectl_exec_with_stdin_carries_the_message_and_the_exit_status() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "kubectl-exec").await;
    running_pod(&ns).await;
    let message = "nudge: keep going\nsecond line\n";
    let run = |script: String| {
        kubectl(
            &[
                "-n", &ns.name, "exec", "-i", "target", "--", "sh", "-c", &script,
            ],
            message,
        )
    };
    let ok = run(format!("head -c {}", message.len()));
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&ok.stdout), message);

    let failed = run(format!("head -c {} >/dev/null; exit 7", message.len()));
    assert!(!failed.status.success());
    assert!(
        String::from_utf8_lossy(&failed.stderr).contains("exit status 7"),
        "{}",
        String::from_utf8_lossy(&failed.stderr)
    );
}
