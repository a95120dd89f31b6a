//! Runs that land, against real git: a bare repository as the remote, each run's
//! workspace a clone on its own branch as the step pod's sync leaves it.

use std::path::PathBuf;

use super::*;
use crate::workspace::land::tests::{Repo, check, sh};

const ONTO: &str = "overseer/ship";

/// A run's workspace: a clone of `from` on the run's own branch, with `edit` made and
/// left uncommitted (the agent's work).
fn run(repo: &Repo, name: &str, from: &str, edit: &str) -> PathBuf {
    sh(
        &repo.root,
        &format!(
            "git clone --quiet {} {name} && cd {name} && git checkout --quiet -B {} origin/{from}",
            repo.url,
            run_branch("ship", name, 1)
        ),
    );
    let dir = repo.root.join(name);
    sh(&dir, edit);
    dir
}

fn land_run(
    repo: &Repo,
    name: &str,
    workspace: &Path,
    checks: &str,
) -> std::result::Result<String, String> {
    let work = Work {
        url: repo.url.clone(),
        onto: ONTO.into(),
        branch: run_branch("ship", name, 1),
        checks: checks.into(),
        what: name.into(),
    };
    land_work(workspace, &repo.root.join(format!("{name}-scratch")), &work)
}

fn onto_file(repo: &Repo, file: &str) -> String {
    sh(
        &repo.root,
        &format!("git --git-dir=origin.git show {ONTO}:{file}"),
    )
}

#[test]
fn runs_side_by_side_land_their_disjoint_work_on_the_goals_branch_made_from_their_start() {
    let repo = Repo::new("goal-disjoint");
    let left = run(&repo, "left", "main", "sed -i 's/^1$/one/' a.txt");
    let right = run(&repo, "right", "main", "sed -i 's/^5$/five/' b.txt");
    let landed = land_run(&repo, "left", &left, "[]").unwrap();
    assert!(
        landed.starts_with("landed on overseer/ship as "),
        "{landed}"
    );
    // The goal's branch was made where the runs started, then took right's work too,
    // though right started before left landed.
    let landed = land_run(&repo, "right", &right, "[]").unwrap();
    assert!(
        landed.starts_with("landed on overseer/ship as "),
        "{landed}"
    );
    assert_eq!(onto_file(&repo, "a.txt").lines().next(), Some("one"));
    assert_eq!(onto_file(&repo, "b.txt").lines().last(), Some("five"));
    assert_eq!(
        repo.main_file("a.txt").lines().next(),
        Some("1"),
        "main untouched"
    );
    // Each run's own branch keeps its work.
    let own = sh(
        &repo.root,
        "git --git-dir=origin.git branch --list 'overseer-runs/ship/*'",
    );
    assert!(own.contains("left-a1") && own.contains("right-a1"), "{own}");
}

#[test]
fn an_overlapping_run_fails_naming_the_paths_and_the_goals_branch_keeps_the_first() {
    let repo = Repo::new("goal-overlap");
    let first = run(&repo, "first", "main", "sed -i 's/^3$/three/' a.txt");
    let second = run(&repo, "second", "main", "sed -i 's/^3$/THREE/' a.txt");
    land_run(&repo, "first", &first, "[]").unwrap();
    let landed_first = sh(
        &repo.root,
        &format!("git --git-dir=origin.git rev-parse {ONTO}"),
    );
    let failed = land_run(&repo, "second", &second, "[]").unwrap_err();
    assert_eq!(
        failed,
        "overseer-runs/ship/second-a1 conflicts with overseer/ship in a.txt"
    );
    assert_eq!(
        sh(
            &repo.root,
            &format!("git --git-dir=origin.git rev-parse {ONTO}")
        ),
        landed_first,
        "nothing overwritten"
    );
}

#[test]
fn a_failing_check_keeps_the_run_off_the_goals_branch_and_no_work_lands_nothing() {
    let repo = Repo::new("goal-check");
    let idle = run(&repo, "idle", "main", "true");
    assert_eq!(
        land_run(&repo, "idle", &idle, "[]").unwrap(),
        "nothing new to land on overseer/ship"
    );
    let before = sh(
        &repo.root,
        &format!("git --git-dir=origin.git rev-parse {ONTO}"),
    );
    let broken = run(&repo, "broken", "main", "echo oops > c.txt");
    let checks = serde_json::to_string(&[check("no-oops", "! grep -q oops c.txt")]).unwrap();
    let failed = land_run(&repo, "broken", &broken, &checks).unwrap_err();
    assert!(failed.starts_with("the check no-oops failed"), "{failed}");
    assert_eq!(
        sh(
            &repo.root,
            &format!("git --git-dir=origin.git rev-parse {ONTO}")
        ),
        before
    );
    assert_eq!(
        before,
        repo.main(),
        "made from the start, nothing on it since"
    );
}
