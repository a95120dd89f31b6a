//! The merge queue on the real control plane, with real git: members push to a bare
//! repository on this machine and ask with `overseer merge request` (as their own
//! ServiceAccounts); each attempt's pod is simulated by kwok and its container is
//! played here, as the shim's are: the real `overseer merge land` with the pod's own
//! environment, its termination message handed to kwok to finish the pod.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use overseer::agent::Agent;
use overseer::kinds::merge::MergeState;
use overseer::swarm::Swarm;
use serde_json::json;

use crate::agent::{WAIT, agent, wait_condition, wait_started};
use crate::overseer::{overseer_as, said};
use crate::support::cluster::{
    TestNamespace, agent_account, create_object, operator, setup, wait_in,
};

/// A bare repository whose `main` holds `a.txt` and `b.txt`, and the members' clones.
pub(crate) struct Remote {
    root: PathBuf,
    pub(crate) url: String,
}

pub(crate) fn sh(dir: &Path, script: &str) -> String {
    let output = Command::new("sh")
        .args(["-c", script])
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "member")
        .env("GIT_AUTHOR_EMAIL", "member@example.com")
        .env("GIT_COMMITTER_NAME", "member")
        .env("GIT_COMMITTER_EMAIL", "member@example.com")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

impl Remote {
    pub(crate) fn new(ns: &TestNamespace) -> Remote {
        Remote::named(&ns.name)
    }

    fn named(name: &str) -> Remote {
        let root = std::env::temp_dir().join(format!("overseer-merge-{name}"));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        sh(&root, "git init --quiet --bare -b main origin.git");
        let url = format!("file://{}/origin.git", root.display());
        sh(
            &root,
            &format!(
                "git clone --quiet {url} seed 2>/dev/null && cd seed && git checkout --quiet -b main && \
             printf '1\\n2\\n3\\n' > a.txt && cp a.txt b.txt && git add . && git commit --quiet -m seed && \
             git push --quiet origin main"
            ),
        );
        Remote { root, url }
    }

    /// The clone of the Agent `member` on its branch `overseer/<member>`, with `edit`
    /// committed and pushed.
    pub(crate) fn push(&self, member: &str, edit: &str) -> PathBuf {
        let dir = self.root.join(member);
        if !dir.exists() {
            sh(
                &self.root,
                &format!("git clone --quiet {} {member} 2>/dev/null", self.url),
            );
            sh(&dir, &format!("git checkout --quiet -b overseer/{member}"));
        }
        sh(
            &dir,
            &format!("{edit} && git commit --quiet -am '{member}' && git push --quiet origin HEAD"),
        );
        dir
    }

    fn main(&self) -> String {
        sh(&self.root, "git --git-dir=origin.git rev-parse main")
    }

    fn show(&self, file: &str) -> String {
        sh(
            &self.root,
            &format!("git --git-dir=origin.git show main:{file}"),
        )
    }

    /// The merges on main, newest first.
    pub(crate) fn merges(&self) -> Vec<String> {
        sh(
            &self.root,
            "git --git-dir=origin.git log --merges --format=%s main",
        )
        .lines()
        .map(str::to_string)
        .collect()
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

async fn create_team(ns: &TestNamespace, remote: &Remote, checks: serde_json::Value) {
    create_object::<Swarm>(
        ns,
        json!({
            "apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm",
            "metadata": {"name": "team"},
            "spec": {
                "defaults": {"runtime": {"name": "pi", "mode": "tui", "image": "example.com/pi:1"}},
                "workspace": {"git": {"url": remote.url, "ref": "main"}},
                "coordination": {"merge": {"checks": checks, "attempts": 2}},
                "agents": [{"name": "a", "role": "builder"}, {"name": "b", "role": "builder"}]
            }
        }),
    )
    .await;
    for member in ["team-a", "team-b"] {
        wait_started(ns, member).await;
    }
}

fn request(ns: &TestNamespace, member: &str, clone: &Path) -> Output {
    let user = agent_account(ns, member);
    let dir = clone.display().to_string();
    overseer_as(
        ns,
        Some(&user),
        &["merge", "--agent", member, "request", "--dir", &dir],
    )
}

/// Plays attempt pod `name` once kwok runs it.
async fn play(ns: &TestNamespace, name: &str) -> String {
    let pods: Api<Pod> = ns.api();
    let pod = wait_in(ns, &format!("merge pod {name} running"), WAIT, || async {
        let pod = pods.get_opt(name).await.ok()??;
        (pod.status.as_ref()?.phase.as_deref() == Some("Running")).then_some(pod)
    })
    .await;
    let message = land_as(&ns.name, &pod);
    let finish = json!({"metadata": {"annotations": {
        "kwok.overseer.dev/outcome": "Succeeded", "kwok.overseer.dev/message": message
    }}});
    pods.patch(name, &PatchParams::default(), &Patch::Merge(&finish))
        .await
        .unwrap();
    message
}

/// Runs the container of the merge attempt `pod` on this machine: `overseer merge
/// land` with the pod's environment in an empty directory of its own; its report.
pub(crate) fn land_as(namespace: &str, pod: &Pod) -> String {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let container = &pod.spec.as_ref().unwrap().containers[0];
    let dir = std::env::temp_dir().join(format!("overseer-attempt-{namespace}-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let report = dir.join("termination-log");
    let mut land = Command::new(env!("CARGO_BIN_EXE_overseer"));
    land.args(["merge", "land"]).current_dir(&dir).env_clear();
    land.env("PATH", std::env::var("PATH").unwrap_or_default());
    for var in container.env.iter().flatten() {
        if var.name != "HOME" {
            land.env(&var.name, var.value.clone().unwrap_or_default());
        }
    }
    land.env("HOME", &dir)
        .env("OVERSEER_TERMINATION_LOG", &report);
    let output = land.output().unwrap();
    assert!(output.status.success(), "{}", said(&output));
    let message = std::fs::read_to_string(&report).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    message
}

async fn queue(ns: &TestNamespace) -> Vec<(i64, String, MergeState)> {
    let swarm = ns.api::<Swarm>().get("team").await.unwrap();
    swarm
        .status
        .map(|s| s.merge_queue)
        .unwrap_or_default()
        .into_iter()
        .map(|e| (e.id, e.member, e.state))
        .collect()
}

async fn wait_state(ns: &TestNamespace, id: i64, state: MergeState) {
    wait_in(ns, &format!("merge {id} {state:?}"), WAIT, || async {
        queue(ns)
            .await
            .iter()
            .any(|(i, _, s)| *i == id && *s == state)
            .then_some(())
    })
    .await;
}

fn mail_of(member: &Agent) -> Vec<String> {
    member
        .status
        .iter()
        .flat_map(|s| &s.mailbox)
        .filter(|m| m.from == "merge-queue")
        .map(|m| m.body.clone())
        .collect()
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn two_disjoint_edits_land_in_order_one_at_a_time_and_each_author_is_mailed() {
    let ns = setup("merge-order").await;
    let _operator = operator(&ns);
    let remote = Remote::new(&ns);
    create_team(
        &ns,
        &remote,
        json!([{"name": "files", "command": ["test", "-f", "a.txt"]}]),
    )
    .await;

    let a = remote.push("team-a", "sed -i 's/^1$/one/' a.txt");
    let b = remote.push("team-b", "sed -i 's/^3$/three/' b.txt");
    let first = request(&ns, "team-a", &a);
    assert!(said(&first).contains("merge #1 of"), "{}", said(&first));
    assert!(
        said(&first).contains("Merging") || said(&first).contains("Queued"),
        "{}",
        said(&first)
    );
    let second = request(&ns, "team-b", &b);
    assert!(
        said(&second).contains("Queued: 1 ahead in the queue"),
        "{}",
        said(&second)
    );

    // One at a time: b's waits, Queued, while a's attempt runs.
    wait_state(&ns, 1, MergeState::Merging).await;
    let states: Vec<MergeState> = queue(&ns).await.iter().map(|e| e.2).collect();
    assert_eq!(states, [MergeState::Merging, MergeState::Queued]);
    let landed = play(&ns, "team-merge-1-1").await;
    assert!(landed.contains("\"outcome\":\"merged\""), "{landed}");
    wait_state(&ns, 1, MergeState::Merged).await;
    play(&ns, "team-merge-2-1").await;
    wait_state(&ns, 2, MergeState::Merged).await;
    assert!(remote.show("a.txt").starts_with("one") && remote.show("b.txt").ends_with("three"));
    let merges = remote.merges();
    assert_eq!(merges.len(), 2, "{merges:?}");
    assert!(
        merges[0].starts_with("Merge overseer/team-b")
            && merges[1].starts_with("Merge overseer/team-a")
    );
    let main = remote.main();
    let a_told = wait_condition(&ns, "team-a", "a's mail", |a| !mail_of(a).is_empty()).await;
    assert!(
        mail_of(&a_told)[0].contains("is merged onto main as"),
        "{:?}",
        mail_of(&a_told)
    );
    let b_told = wait_condition(&ns, "team-b", "b's mail", |b| !mail_of(b).is_empty()).await;
    assert!(
        mail_of(&b_told)[0].ends_with(&format!("merged onto main as {main}.")),
        "{:?}",
        mail_of(&b_told)
    );
    // The attempts' pods go once their outcome is in the status.
    wait_in(&ns, "the attempts' pods gone", WAIT, || async {
        let left = ns.api::<Pod>().list(&Default::default()).await.ok()?.items;
        let merging = left.iter().filter(|p| {
            p.metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key("overseer.dev/merge"))
                && p.metadata.deletion_timestamp.is_none()
        });
        (merging.count() == 0).then_some(())
    })
    .await;
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_conflict_is_mailed_with_its_paths_a_failing_check_changes_nothing_and_attempts_run_out_to_the_overseer()
 {
    let ns = setup("merge-refused").await;
    let _operator = operator(&ns);
    let remote = Remote::new(&ns);
    create_team(
        &ns,
        &remote,
        json!([{"name": "no-fail", "command": ["sh", "-c", "! test -f FAIL"]}]),
    )
    .await;

    let a = remote.push("team-a", "sed -i 's/^2$/two/' a.txt");
    let b = remote.push("team-b", "sed -i 's/^2$/TWO/' a.txt");
    assert!(request(&ns, "team-a", &a).status.success());
    play(&ns, "team-merge-1-1").await;
    wait_state(&ns, 1, MergeState::Merged).await;

    // b changed the same line: a conflict, named, nothing landed.
    let before = remote.main();
    assert!(request(&ns, "team-b", &b).status.success());
    play(&ns, "team-merge-2-1").await;
    wait_state(&ns, 2, MergeState::Conflict).await;
    assert_eq!(remote.main(), before);
    let told = wait_condition(&ns, "team-b", "b's conflict mail", |b| {
        !mail_of(b).is_empty()
    })
    .await;
    assert!(
        mail_of(&told)[0].contains("conflicts with main in: a.txt"),
        "{:?}",
        mail_of(&told)
    );

    // b merges main in, keeps both, adds a file its check refuses: the check fails.
    sh(
        &b,
        "git fetch --quiet origin main && (git merge --quiet origin/main 2>/dev/null || true) && \
            printf '1\\ntwo TWO\\n3\\n' > a.txt && touch FAIL && git add . && git commit --quiet -m both && \
            git push --quiet origin HEAD",
    );
    assert!(request(&ns, "team-b", &b).status.success());
    play(&ns, "team-merge-3-1").await;
    wait_state(&ns, 3, MergeState::ChecksFailed).await;
    assert_eq!(
        remote.main(),
        before,
        "a failing check leaves the target unchanged"
    );

    // Fixed and asked again with --wait: it lands, the command says so.
    sh(
        &b,
        "git rm --quiet FAIL && git commit --quiet -m fixed && git push --quiet origin HEAD",
    );
    let user = agent_account(&ns, "team-b");
    let dir = b.display().to_string();
    let waiting = {
        let (ns_name, bin) = (ns.name.clone(), env!("CARGO_BIN_EXE_overseer"));
        let kubeconfig = crate::support::cluster::kubeconfig_path();
        std::thread::spawn(move || {
            Command::new(bin)
                .args([
                    "merge", "--agent", "team-b", "request", "--wait", "--dir", &dir,
                ])
                .env("KUBECONFIG", kubeconfig)
                .env("OVERSEER_NAMESPACE", ns_name)
                .env("KUBE_RS_DEBUG_IMPERSONATE_USER", user)
                .output()
                .unwrap()
        })
    };
    play(&ns, "team-merge-4-1").await;
    let waited = tokio::task::spawn_blocking(move || waiting.join().unwrap())
        .await
        .unwrap();
    assert!(
        waited.status.success() && said(&waited).contains("Merged"),
        "{}",
        said(&waited)
    );
    assert!(remote.show("a.txt").contains("two TWO"));

    // An attempt that never reports, twice: the attempts run out, b's overseer is told.
    let b = remote.push("team-b", "echo more >> b.txt");
    assert!(request(&ns, "team-b", &b).status.success());
    for attempt in [1, 2] {
        let pods: Api<Pod> = ns.api();
        let name = format!("team-merge-5-{attempt}");
        wait_in(&ns, &format!("{name} running"), WAIT, || async {
            let pod = pods.get_opt(&name).await.ok()??;
            (pod.status?.phase.as_deref() == Some("Running")).then_some(())
        })
        .await;
        let fail = json!({"metadata": {"annotations": {"kwok.overseer.dev/outcome": "Failed"}}});
        pods.patch(&name, &PatchParams::default(), &Patch::Merge(&fail))
            .await
            .unwrap();
    }
    wait_state(&ns, 5, MergeState::Failed).await;
    let b = wait_condition(&ns, "team-b", "b's escalation", |b| {
        b.status.as_ref().is_some_and(|s| {
            s.escalations.iter().any(|e| {
                e.reason
                    .as_deref()
                    .is_some_and(|r| r.contains("merge queue"))
            })
        })
    })
    .await;
    assert!(
        mail_of(&b).iter().any(|m| m.contains("2 attempts ran out")),
        "{:?}",
        mail_of(&b)
    );
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_push_whose_report_was_lost_ends_merged_once_and_a_commit_not_pushed_is_refused() {
    let ns = setup("merge-crash").await;
    let remote = Remote::new(&ns);
    let running = operator(&ns);
    create_team(&ns, &remote, json!([])).await;
    let a = remote.push("team-a", "sed -i 's/^1$/one/' a.txt");

    // Not pushed: refused before anything is asked.
    sh(&a, "echo local >> b.txt && git commit --quiet -am local");
    let refused = request(&ns, "team-a", &a);
    assert_eq!(refused.status.code(), Some(1), "{}", said(&refused));
    assert!(said(&refused).contains("push first"), "{}", said(&refused));
    sh(&a, "git push --quiet origin HEAD");

    assert!(request(&ns, "team-a", &a).status.success());
    // The operator stops; the attempt pushes; its pod is lost before anyone read it.
    let pods: Api<Pod> = ns.api();
    wait_in(&ns, "the first attempt's pod", WAIT, || async {
        pods.get_opt("team-merge-1-1").await.ok()?.map(|_| ())
    })
    .await;
    drop(running);
    play(&ns, "team-merge-1-1").await;
    let landed = remote.main();
    pods.delete("team-merge-1-1", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    wait_in(&ns, "the pod gone", WAIT, || async {
        pods.get_opt("team-merge-1-1")
            .await
            .ok()?
            .is_none()
            .then_some(())
    })
    .await;
    let _operator = operator(&ns);
    // Its pod is gone without a report: the attempt is made again, finds the commit
    // landed, and pushes nothing.
    let report = play(&ns, "team-merge-1-1").await;
    assert!(report.contains("alreadyMerged"), "{report}");
    wait_state(&ns, 1, MergeState::Merged).await;
    assert_eq!(remote.main(), landed, "no second push");
    assert_eq!(remote.merges().len(), 1);
    // The author is answered in a write after the queue's: wait for it, then give a
    // second answer time to show before counting.
    wait_condition(&ns, "team-a", "a's mail", |a| !mail_of(a).is_empty()).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let a = agent(&ns, "team-a").await;
    assert_eq!(mail_of(&a).len(), 1, "{:?}", mail_of(&a));
}

/// Members of the rate test, each with a file of its own (disjoint edits).
const RATE_MEMBERS: usize = 10;

/// `RATE_MEMBERS` pushed commits, each on `overseer/team-m<i>` of `remote`; their shas.
fn rate_commits(remote: &Remote) -> Vec<String> {
    (0..RATE_MEMBERS)
        .map(|i| {
            let edit = format!("echo {i} > f{i}.txt && git add f{i}.txt");
            let clone = remote.push(&format!("team-m{i}"), &edit);
            sh(&clone, "git rev-parse HEAD")
        })
        .collect()
}

/// The figure: merges per minute with a trivial check, through the queue (each attempt
/// a kwok pod whose container is played here), beside the same merges run by `overseer
/// merge land` in sequence on this machine with no cluster (git's own cost).
#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn merges_per_minute_with_a_trivial_check_beside_bare_git() {
    let ns = setup("merge-rate").await;
    let check = json!([{"name": "files", "command": ["test", "-f", "a.txt"]}]);
    // Baseline: the attempts alone, one after another.
    let bare = Remote::named(&format!("{}-bare", ns.name));
    let shas = rate_commits(&bare);
    let started = std::time::Instant::now();
    for (i, sha) in shas.iter().enumerate() {
        let dir = bare.root.join(format!("attempt-{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        let output = Command::new(env!("CARGO_BIN_EXE_overseer"))
            .args(["merge", "land"])
            .current_dir(&dir)
            .env("OVERSEER_GIT_URL", &bare.url)
            .env("OVERSEER_MERGE_TARGET", "main")
            .env("OVERSEER_MERGE_BRANCH", format!("overseer/team-m{i}"))
            .env("OVERSEER_MERGE_SHA", sha)
            .env("OVERSEER_MERGE_CHECKS", check.to_string())
            .env("OVERSEER_TERMINATION_LOG", dir.join("report"))
            .output()
            .unwrap();
        let report = std::fs::read_to_string(dir.join("report")).unwrap_or_default();
        assert!(
            output.status.success() && report.contains("\"merged\""),
            "{report}"
        );
    }
    let bare_seconds = started.elapsed().as_secs_f64();
    assert_eq!(bare.merges().len(), RATE_MEMBERS);

    // Through the queue.
    let _operator = operator(&ns);
    let remote = Remote::new(&ns);
    let shas = rate_commits(&remote);
    let members: Vec<serde_json::Value> = (0..RATE_MEMBERS)
        .map(|i| json!({"name": format!("m{i}"), "role": "builder"}))
        .collect();
    create_object::<Swarm>(
        &ns,
        json!({"apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm", "metadata": {"name": "team"},
        "spec": {
            "defaults": {"runtime": {"name": "pi", "mode": "tui", "image": "example.com/pi:1"}},
            "workspace": {"git": {"url": remote.url, "ref": "main"}},
            "coordination": {"merge": {"checks": check}},
            "agents": members
        }}),
    )
    .await;
    for i in 0..RATE_MEMBERS {
        wait_started(&ns, &format!("team-m{i}")).await;
    }
    let player = {
        let (pods, namespace): (Api<Pod>, String) = (ns.api(), ns.name.clone());
        tokio::spawn(async move {
            let mut played = std::collections::BTreeSet::new();
            loop {
                let list = pods
                    .list(&Default::default())
                    .await
                    .map(|l| l.items)
                    .unwrap_or_default();
                for pod in list {
                    let name = pod.metadata.name.clone().unwrap_or_default();
                    let running =
                        pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
                    let merge = pod
                        .metadata
                        .labels
                        .as_ref()
                        .is_some_and(|l| l.contains_key("overseer.dev/merge"));
                    if !merge || !running || !played.insert(name.clone()) {
                        continue;
                    }
                    let ns_name = namespace.clone();
                    let message = tokio::task::spawn_blocking(move || land_as(&ns_name, &pod))
                        .await
                        .unwrap();
                    let finish = json!({"metadata": {"annotations": {
                        "kwok.overseer.dev/outcome": "Succeeded", "kwok.overseer.dev/message": message}}});
                    let _ = pods
                        .patch(&name, &PatchParams::default(), &Patch::Merge(&finish))
                        .await;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    let agents: Api<Agent> = ns.api();
    let started = std::time::Instant::now();
    for (i, sha) in shas.iter().enumerate() {
        let ask = json!({"status": {"mergeRequests": [{"seq": 1, "branch": format!("overseer/team-m{i}"),
            "sha": sha, "time": jiff::Timestamp::now().to_string()}]}});
        agents
            .patch_status(
                &format!("team-m{i}"),
                &PatchParams::default(),
                &Patch::Merge(&ask),
            )
            .await
            .unwrap();
    }
    wait_in(
        &ns,
        "every merge landed",
        Duration::from_secs(240),
        || async {
            let landed = queue(&ns)
                .await
                .iter()
                .filter(|e| e.2 == MergeState::Merged)
                .count();
            (landed == RATE_MEMBERS).then_some(())
        },
    )
    .await;
    let queue_seconds = started.elapsed().as_secs_f64();
    player.abort();
    assert_eq!(remote.merges().len(), RATE_MEMBERS, "each landed once");
    let report = format!(
        "{RATE_MEMBERS} merges with a trivial check: `overseer merge land` in sequence, no cluster: {bare_seconds:.1}s ({:.0}/min); through the queue, one attempt pod at a time (kwok pods, containers played here): {queue_seconds:.1}s ({:.0}/min), {:.2}s per merge over git's own\n",
        RATE_MEMBERS as f64 * 60.0 / bare_seconds,
        RATE_MEMBERS as f64 * 60.0 / queue_seconds,
        (queue_seconds - bare_seconds) / RATE_MEMBERS as f64
    );
    println!("{report}");
    let logs = crate::support::cluster::repo_root().join("target/test-logs");
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::write(logs.join("merge-rate.txt"), report).unwrap();
}
