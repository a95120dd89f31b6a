//! `overseer merge land`, in a merge queue's pod (and, for a goal's run that lands, in
//! its step pod: src/goal/land.rs): one attempt at landing a member's
//! exact commit on the target branch. It clones afresh, notes the target's commit,
//! merges the commit (never resolving a conflict: the paths are reported), runs the
//! checks in the merged tree, and pushes with a lease on the commit it started from,
//! so a target that moved meanwhile is reported and tried again, never overwritten. A
//! commit already on the target (an attempt before a stop pushed it) is reported
//! merged without a push. The outcome goes to the termination message, as JSON.

use std::path::Path;
use std::process::{Command, Output};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::role_schema;
use crate::{Error, Result};

/// One check of the merge queue.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MergeCheck {
    #[schemars(schema_with = "role_schema")]
    pub name: String,
    /// The command and its arguments (no shell unless you name one).
    #[schemars(length(min = 1, max = 64), inner(length(max = 4096)))]
    pub command: Vec<String>,
}

/// What an attempt's pod reported (its termination message).
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "outcome", rename_all = "camelCase")]
pub enum Landing {
    /// Merged and pushed: the target's new commit.
    Merged { sha: String },
    /// The commit was on the target already (an attempt before a stop pushed it).
    AlreadyMerged { sha: String },
    /// The paths both sides changed.
    Conflict { paths: Vec<String> },
    /// A check exited non-zero: its name and its output's tail.
    ChecksFailed { check: String, tail: String },
    /// The target moved between the clone and the push: try again.
    TargetMoved,
    /// The commit is not on the branch (or either is gone).
    NotOnBranch { reason: String },
    /// Anything else (git failed, the remote refused): try again.
    Error { reason: String },
}

/// The end of a failing check's output that the author is mailed, at most.
pub const TAIL_BYTES: usize = 2048;

/// What the attempt is told, from its environment.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub url: String,
    pub target: String,
    pub branch: String,
    pub sha: String,
    pub checks: Vec<MergeCheck>,
}

impl Job {
    pub fn from_env() -> Result<Job> {
        let var = |name: &str| {
            std::env::var(name)
                .ok()
                .filter(|v| !v.is_empty())
                .ok_or_else(|| Error::Usage(format!("{name} is not set")))
        };
        let checks = std::env::var("OVERSEER_MERGE_CHECKS").unwrap_or_else(|_| "[]".into());
        Ok(Job {
            url: var("OVERSEER_GIT_URL")?,
            target: var("OVERSEER_MERGE_TARGET")?,
            branch: var("OVERSEER_MERGE_BRANCH")?,
            sha: var("OVERSEER_MERGE_SHA")?,
            checks: serde_json::from_str(&checks)
                .map_err(|e| Error::Usage(format!("OVERSEER_MERGE_CHECKS: {e}")))?,
        })
    }
}

/// One attempt of `job` in `dir`.
pub fn land(dir: &Path, job: &Job) -> Landing {
    match attempt(dir, job) {
        Ok(landing) => landing,
        Err(error) => Landing::Error {
            reason: error.to_string().chars().take(1000).collect(),
        },
    }
}

fn attempt(dir: &Path, job: &Job) -> Result<Landing> {
    crate::workspace::sync::init_clone(dir, &job.url)?;
    if !git(
        dir,
        &["fetch", "--quiet", "--no-tags", "origin", &job.target],
    )?
    .status
    .success()
    {
        return Ok(Landing::Error {
            reason: format!("the target branch {} could not be fetched", job.target),
        });
    }
    must(
        dir,
        &["checkout", "--quiet", "-B", &job.target, "FETCH_HEAD"],
    )?;
    let before = text(&must(dir, &["rev-parse", "HEAD"])?);
    let fetched = git(
        dir,
        &["fetch", "--quiet", "--no-tags", "origin", &job.branch],
    )?;
    if !fetched.status.success() {
        let reason = format!("the branch {} is not on the remote", job.branch);
        return Ok(Landing::NotOnBranch { reason });
    }
    if !is_ancestor(dir, &job.sha, "FETCH_HEAD")? {
        let reason = format!("{} is not on the branch {}", job.sha, job.branch);
        return Ok(Landing::NotOnBranch { reason });
    }
    if is_ancestor(dir, &job.sha, "HEAD")? {
        return Ok(Landing::AlreadyMerged { sha: before });
    }
    let message = format!(
        "Merge {} ({}) through the overseer merge queue",
        job.branch,
        &job.sha[..12.min(job.sha.len())]
    );
    let merged = git(
        dir,
        &["merge", "--no-ff", "--no-edit", "-m", &message, &job.sha],
    )?;
    if !merged.status.success() {
        let unmerged = must(dir, &["diff", "--name-only", "--diff-filter=U"])?;
        let paths: Vec<String> = text(&unmerged).lines().map(str::to_string).collect();
        let _ = git(dir, &["merge", "--abort"]);
        if paths.is_empty() {
            return Err(Error::Git(format!(
                "git merge failed: {}",
                err_text(&merged)
            )));
        }
        return Ok(Landing::Conflict { paths });
    }
    for check in &job.checks {
        if let Some(failed) = run_check(dir, check)? {
            return Ok(failed);
        }
    }
    let lease = format!("--force-with-lease=refs/heads/{}:{before}", job.target);
    let refspec = format!("HEAD:refs/heads/{}", job.target);
    let pushed = git(
        dir,
        &["push", "--quiet", "--porcelain", &lease, "origin", &refspec],
    )?;
    if !pushed.status.success() {
        let said = format!("{}{}", text(&pushed), err_text(&pushed));
        if said.contains("stale info") || said.contains("rejected") || said.contains("fetch first")
        {
            return Ok(Landing::TargetMoved);
        }
        return Err(Error::Git(format!("git push failed: {}", said.trim())));
    }
    Ok(Landing::Merged {
        sha: text(&must(dir, &["rev-parse", "HEAD"])?),
    })
}

/// Runs `check` in `dir`: None when it exits 0, else its failure with the output's tail.
fn run_check(dir: &Path, check: &MergeCheck) -> Result<Option<Landing>> {
    let (program, args) = check
        .command
        .split_first()
        .ok_or_else(|| Error::Usage(format!("the check {} has no command", check.name)))?;
    let output = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| {
            Error::Usage(format!(
                "the check {} could not run {program}: {e}",
                check.name
            ))
        })?;
    if output.status.success() {
        return Ok(None);
    }
    let mut all = String::from_utf8_lossy(&output.stdout).into_owned();
    all.push_str(&String::from_utf8_lossy(&output.stderr));
    Ok(Some(Landing::ChecksFailed {
        check: check.name.clone(),
        tail: tail(&all, TAIL_BYTES),
    }))
}

/// The last `bytes` of `text` (at a character boundary), control characters but line
/// breaks and tabs removed.
pub fn tail(text: &str, bytes: usize) -> String {
    let mut start = text.len().saturating_sub(bytes);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..]
        .chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                ' '
            } else {
                c
            }
        })
        .collect()
}

fn is_ancestor(dir: &Path, commit: &str, of: &str) -> Result<bool> {
    Ok(git(dir, &["merge-base", "--is-ancestor", commit, of])?
        .status
        .success())
}

/// `git args` in `dir` as the merge queue (its name on the merge commits).
pub(crate) fn git(dir: &Path, args: &[&str]) -> Result<Output> {
    Command::new("git")
        .args([
            "-c",
            "user.name=overseer merge queue",
            "-c",
            "user.email=merge-queue@overseer.dev",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .map_err(|e| Error::Git(format!("running git: {e} (the merge image needs git)")))
}

/// `git args` that must succeed.
pub(crate) fn must(dir: &Path, args: &[&str]) -> Result<Output> {
    let output = git(dir, args)?;
    if output.status.success() {
        return Ok(output);
    }
    Err(Error::Git(format!(
        "git {} failed: {}",
        args.first().copied().unwrap_or_default(),
        err_text(&output)
    )))
}

pub(crate) fn text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

fn err_text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).trim().to_string()
}

#[cfg(test)]
#[path = "land_tests.rs"]
pub(crate) mod tests;
