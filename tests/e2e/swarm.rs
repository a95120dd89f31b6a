//! A Swarm whose read-only scout really cannot write its workspace: the kubelet
//! mounts it read-only, so a write fails with EROFS, while the builder's succeeds.

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use overseer::swarm::Swarm;

use crate::release::{POD_START, agent_image, create, exec, install, is_ready, namespace};
use crate::support::cluster::wait_in;

#[tokio::test]
#[ignore = "needs a real node: run by hack/e2e/run.sh (make test)"]
async fn a_read_only_scout_cannot_write_its_workspace() {
    let ns = namespace("swarm").await;
    install(&ns).await;
    let image = agent_image();
    create::<Swarm>(
        &ns,
        &format!(
            "{{apiVersion: overseer.dev/v1alpha1, kind: Swarm, metadata: {{name: billing}},
              spec: {{defaults: {{runtime: {{name: claude, image: '{image}'}}}},
                      prompts: {{base: Work only inside the billing service.}},
                      agents: [{{name: scout, role: scout, prompt: Map the code.}},
                               {{name: builder, role: builder, prompt: Build it.}}]}}}}"
        ),
    )
    .await;
    let pods: Api<Pod> = ns.api();
    let ready = wait_in(&ns, "the scout and the builder Ready", POD_START, || {
        let pods = pods.clone();
        async move {
            let list = pods
                .list(&ListParams::default().labels("overseer.dev/swarm=billing"))
                .await
                .ok()?;
            let find = |role: &str| {
                list.items
                    .iter()
                    .find(|p| {
                        let labels = p.metadata.labels.as_ref();
                        labels
                            .and_then(|l| l.get("overseer.dev/role"))
                            .is_some_and(|r| r == role)
                            && is_ready(p)
                    })
                    .and_then(|p| p.metadata.name.clone())
            };
            Some((find("scout")?, find("builder")?))
        }
    })
    .await;
    let (scout, builder) = ready;
    let write = "echo probe > /workspace/probe";
    let refused = exec(&ns, &scout, &["sh", "-c", write]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "the scout wrote its workspace");
    assert!(stderr.contains("Read-only file system"), "EROFS: {stderr}");
    println!(
        "e2e[{}]: scout {scout}: `{write}` -> {}",
        ns.name,
        stderr.lines().next().unwrap_or_default()
    );
    let written = exec(
        &ns,
        &builder,
        &["sh", "-c", &format!("{write} && cat /workspace/probe")],
    );
    assert!(
        written.status.success() && String::from_utf8_lossy(&written.stdout).trim() == "probe",
        "the builder writes its workspace: {}",
        String::from_utf8_lossy(&written.stderr)
    );
    // Even a writing role cannot replace the binary the operator's exec runs (a hung
    // or forged `overseer input` would hold the operator's delivery), nor write beside
    // it; the shim's own directory stays writable.
    for write in [
        "echo forged > /overseer/bin/overseer",
        "touch /overseer/bin/other",
    ] {
        let refused = exec(&ns, &builder, &["sh", "-c", write]);
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(!refused.status.success(), "the builder ran `{write}`");
        assert!(stderr.contains("Read-only file system"), "EROFS: {stderr}");
    }
    let run_dir = exec(&ns, &builder, &["sh", "-c", "touch /overseer/run/probe"]);
    assert!(
        run_dir.status.success(),
        "{}",
        String::from_utf8_lossy(&run_dir.stderr)
    );
    // Nothing can be placed in a read-only workspace (runc cannot even create a mount
    // point there): the scout reads its instructions from the mounted ConfigMap, and
    // the shim opens its first prompt with them.
    let instructions = exec(&ns, &scout, &["cat", "/overseer/instructions/CLAUDE.md"]);
    assert!(
        String::from_utf8_lossy(&instructions.stdout)
            .contains("Work only inside the billing service."),
        "{}",
        String::from_utf8_lossy(&instructions.stderr)
    );
}
