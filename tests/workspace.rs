//! `overseer workspace sync` with real git: the init container's clone of a workspace's
//! source, a clone kept across pods, and work resumed from the branch pushed before.

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(["-c", "user.name=test", "-c", "user.email=test@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// A fresh directory of this test process under target/.
fn fresh(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("workspace-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A bare repository whose `main` has one commit with README.md.
fn remote() -> PathBuf {
    let seed = fresh("seed");
    git(&seed, &["init", "--quiet", "--initial-branch", "main"]);
    std::fs::write(seed.join("README.md"), "widgets\n").unwrap();
    git(&seed, &["add", "README.md"]);
    git(&seed, &["commit", "--quiet", "-m", "first"]);
    let bare = fresh("remote");
    git(
        &bare,
        &["clone", "--quiet", "--bare", seed.to_str().unwrap(), "."],
    );
    bare
}

/// Runs `overseer workspace sync` in `dir` for `remote`, on `branch` from `main`.
fn sync(dir: &Path, remote: &Path, branch: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_overseer"))
        .args(["workspace", "sync"])
        .current_dir(dir)
        .env("OVERSEER_GIT_URL", format!("file://{}", remote.display()))
        .env("OVERSEER_GIT_REF", "main")
        .env("OVERSEER_GIT_BRANCH", branch)
        .output()
        .unwrap()
}

#[test]
fn a_workspace_is_cloned_on_its_branch_kept_across_pods_and_resumed_from_the_remote() {
    let remote = remote();
    let first_pod = fresh("first");
    let output = sync(&first_pod, &remote, "overseer/ship");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        git(&first_pod, &["branch", "--show-current"]),
        "overseer/ship"
    );
    assert_eq!(
        std::fs::read_to_string(first_pod.join("README.md")).unwrap(),
        "widgets\n"
    );

    // The agent works; a later pod on the same (persistent) workspace keeps it all.
    std::fs::write(first_pod.join("feature.rs"), "fn prorate() {}\n").unwrap();
    let output = sync(&first_pod, &remote, "overseer/ship");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("keeping the clone"));
    assert!(
        first_pod.join("feature.rs").exists(),
        "uncommitted work is kept"
    );

    // Work pushed from there is where a fresh workspace (an emptyDir pod) resumes.
    git(&first_pod, &["add", "feature.rs"]);
    git(&first_pod, &["commit", "--quiet", "-m", "prorate"]);
    git(&first_pod, &["push", "--quiet", "origin", "overseer/ship"]);
    let fresh_pod = fresh("fresh");
    let output = sync(&fresh_pod, &remote, "overseer/ship");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("the remote's"));
    assert_eq!(git(&fresh_pod, &["log", "-1", "--format=%s"]), "prorate");

    // A source that does not exist fails the init container with git's reason.
    let nowhere = fresh("nowhere");
    let output = sync(&nowhere, &nowhere.join("missing"), "overseer/x");
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("git fetch failed"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
