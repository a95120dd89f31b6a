//! A step that runs beside others and writes code works on a branch of its own,
//! `overseer-runs/<goal>/<run>-a<attempt>`, cloned fresh from the goal's branch, so that
//! no two runs write to one tree. Once its agent exits 0, `overseer step` lands it on
//! the goal's branch as the swarm's merge queue lands a member's (src/workspace/land.rs,
//! the same code): its exact commit merged into a fresh clone, the swarm's merge checks
//! run, pushed with a lease on the commit it started from. A goal's branch that moved
//! meanwhile (another run landed) is tried again; a conflict or a failing check fails
//! the step, naming the paths or the check, and its retry starts afresh from the
//! goal's branch as the others left it. Nothing is resolved or overwritten silently.

use std::path::Path;
use std::time::Duration;

use crate::workspace::land::{Job, Landing, git, land, must, text};
use crate::{Error, Result};

/// The goal's branch a run lands on (set only for runs that land).
pub const ONTO_ENV: &str = "OVERSEER_LAND_ONTO";
/// The run's own branch.
pub const BRANCH_ENV: &str = "OVERSEER_LAND_BRANCH";
/// A failed landing's termination message starts so: the goal's status quotes it.
pub const FAILED_PREFIX: &str = "landing failed: ";
/// Tries when the goal's branch moved between a clone and its push.
const TRIES: usize = 5;

/// The branch of attempt `attempt` of run `run` of goal `goal`: outside `overseer/`,
/// where git could not hold it beside the goal's own `overseer/<goal>`.
pub fn run_branch(goal: &str, run: &str, attempt: i32) -> String {
    format!("overseer-runs/{goal}/{run}-a{attempt}")
}

/// In the step pod, after the agent exited with `code`: lands the run's work when it
/// succeeded and is one that lands; the step's exit code. A failure to land is the
/// step's termination message (`termination_log`).
pub fn after_step(code: i32, termination_log: &Path) -> i32 {
    let (Some(onto), Some(branch)) = (var(ONTO_ENV), var(BRANCH_ENV)) else {
        return code;
    };
    if code != 0 {
        return code;
    }
    let job = Work {
        url: var("OVERSEER_GIT_URL").unwrap_or_default(),
        onto,
        branch,
        checks: var("OVERSEER_MERGE_CHECKS").unwrap_or_else(|| "[]".into()),
        what: var("OVERSEER_STEP").unwrap_or_else(|| "a step".into()),
    };
    let scratch = Path::new(crate::pods::BIN_DIR).with_file_name("land");
    match land_work(Path::new(crate::workspace::DIR), &scratch, &job) {
        Ok(said) => {
            println!("overseer: {said}");
            0
        }
        Err(failure) => {
            let report = format!("{FAILED_PREFIX}{failure}");
            eprintln!("overseer: {report}");
            let _ = std::fs::write(termination_log, &report);
            1
        }
    }
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// What a run lands, and where.
pub struct Work {
    pub url: String,
    pub onto: String,
    pub branch: String,
    /// The swarm's merge checks, as JSON.
    pub checks: String,
    pub what: String,
}

/// Commits what the agent left uncommitted in `workspace`, pushes the run's branch and
/// lands it (attempts in `scratch`): what happened, or why it may not stand.
pub fn land_work(
    workspace: &Path,
    scratch: &Path,
    work: &Work,
) -> std::result::Result<String, String> {
    let sha = push_branch(workspace, work).map_err(|e| e.to_string())?;
    let checks = serde_json::from_str(&work.checks).map_err(|e| format!("the checks: {e}"))?;
    let job = Job {
        url: work.url.clone(),
        target: work.onto.clone(),
        branch: work.branch.clone(),
        sha,
        checks,
    };
    for _ in 0..TRIES {
        let _ = std::fs::remove_dir_all(scratch);
        std::fs::create_dir_all(scratch).map_err(|e| e.to_string())?;
        match land(scratch, &job) {
            Landing::Merged { sha } => return Ok(format!("landed on {} as {sha}", work.onto)),
            Landing::AlreadyMerged { .. } => {
                return Ok(format!("nothing new to land on {}", work.onto));
            }
            Landing::Conflict { paths } => {
                return Err(format!(
                    "{} conflicts with {} in {}",
                    work.branch,
                    work.onto,
                    paths.join(", ")
                ));
            }
            Landing::ChecksFailed { check, tail } => {
                return Err(format!("the check {check} failed: {tail}"));
            }
            Landing::NotOnBranch { reason } => return Err(reason),
            Landing::TargetMoved | Landing::Error { .. } => {
                std::thread::sleep(Duration::from_millis(500));
            }
        }
    }
    Err(format!("{} kept moving or could not be reached", work.onto))
}

/// Commits the workspace's changes, if any, and pushes the run's branch; its commit.
/// The goal's branch is made from where the run started when the remote lacks it.
fn push_branch(workspace: &Path, work: &Work) -> Result<String> {
    let dirty = !text(&must(workspace, &["status", "--porcelain"])?).is_empty();
    if dirty {
        must(workspace, &["add", "--all"])?;
        let message = format!("{}: the step's work", work.what);
        must(workspace, &["commit", "--quiet", "-m", &message])?;
    }
    let sha = text(&must(workspace, &["rev-parse", "HEAD"])?);
    // The first commit of the branch's reflog: where the run started.
    let started = text(&must(workspace, &["reflog", "--format=%H", "HEAD"])?);
    let start = started.lines().last().unwrap_or(&sha).to_string();
    let create = format!("--force-with-lease=refs/heads/{}:", work.onto);
    let onto = format!("{start}:refs/heads/{}", work.onto);
    // Refused when the branch exists: then it stays as it is.
    let _ = git(workspace, &["push", "--quiet", &create, "origin", &onto])?;
    let own = format!("HEAD:refs/heads/{}", work.branch);
    let pushed = git(workspace, &["push", "--quiet", "--force", "origin", &own])?;
    if !pushed.status.success() {
        return Err(Error::Git(format!(
            "pushing {}: {}",
            work.branch,
            String::from_utf8_lossy(&pushed.stderr).trim()
        )));
    }
    Ok(sha)
}

#[cfg(test)]
#[path = "land_tests.rs"]
mod tests;
