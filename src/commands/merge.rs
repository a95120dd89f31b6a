//! `overseer merge request`, in a member's pod: asks the swarm's merge queue to land
//! the commit the member pushed (its workspace's HEAD, which must be what the remote's
//! branch holds), through a request in the member's own status, and prints the answer;
//! with `--wait`, then how it ended. `overseer merge` lists what became of its requests.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use serde_json::json;

use super::access::{agents, await_own_status, own_status, queue_next, queue_onto_version};
use crate::kinds::agent::{Agent, AgentStatus};
use crate::kinds::merge::{MergeRecord, MergeRequest, MergeState};
use crate::{Error, Result};

const MERGE_MANAGER: &str = "overseer-merge";
/// Requests kept at once, at most (the schema's limit).
const REQUESTS_LIMIT: usize = 8;
const POLL: Duration = Duration::from_millis(500);

/// The requests after adding one for `branch` at `sha`: those not answered yet, and the
/// new one with the next seq.
fn requests(
    status: &AgentStatus,
    branch: &str,
    sha: &str,
    now: Timestamp,
) -> Result<Vec<MergeRequest>> {
    let ledger = status.merges.as_ref();
    let busy =
        format!("{REQUESTS_LIMIT} merge requests wait to be taken already; try again shortly");
    queue_next(
        &status.merge_requests,
        ledger.map_or(0, |l| l.answered),
        ledger.iter().flat_map(|l| &l.records).map(|r| r.seq),
        (REQUESTS_LIMIT, &busy),
        |seq| MergeRequest {
            seq,
            branch: branch.to_string(),
            sha: sha.to_string(),
            time: Time(now),
        },
    )
}

/// `git args` in `dir`, its output; the error names the command.
fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .map_err(|e| Error::Git(format!("running git: {e}")))?;
    if !output.status.success() {
        return Err(Error::Git(format!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// The branch and commit of the workspace `dir`, refused unless the remote's branch
/// holds exactly that commit (the queue merges what was pushed, nothing else).
pub fn pushed_head(dir: &Path) -> Result<(String, String)> {
    let branch = git(dir, &["rev-parse", "--abbrev-ref", "HEAD"])?;
    let sha = git(dir, &["rev-parse", "HEAD"])?;
    let remote = git(
        dir,
        &["ls-remote", "origin", &format!("refs/heads/{branch}")],
    )?;
    let on_remote = remote.split_whitespace().next().unwrap_or_default();
    if on_remote != sha {
        let there = if on_remote.is_empty() {
            "not there"
        } else {
            on_remote
        };
        return Err(Error::Refused(format!(
            "push first: HEAD of {branch} is {sha}, and origin's {branch} is {there} (git push origin {branch})"
        )));
    }
    Ok((branch, sha))
}

/// `overseer merge request`: queues the request in `agent`'s status and waits up to
/// `wait` for the answer; with `until_end`, then until it lands or fails (exit 1
/// unless it landed).
pub async fn request(
    namespace: Option<&str>,
    agent: &str,
    dir: &Path,
    wait: Duration,
    until_end: bool,
) -> Result<()> {
    let (branch, sha) = pushed_head(dir)?;
    let api = agents(namespace).await?;
    let action = ("ask for a merge as", MERGE_MANAGER);
    let written = queue_onto_version(&api, agent, action, |status| {
        let requests = requests(status, &branch, &sha, Timestamp::now())?;
        let seq = requests.last().map_or(0, |r| r.seq);
        Ok((json!({"mergeRequests": requests}), seq))
    })
    .await?
    .ok_or_else(|| {
        Error::Busy(format!(
            "{agent} changed too often to queue the request; try again"
        ))
    })?;
    let seq = written;
    let Some(answer) = await_record(&api, agent, seq, wait, |_| true).await? else {
        println!("merge #{seq} of {sha} requested; the operator takes it as soon as it runs");
        return Ok(());
    };
    println!("{}", line(&answer));
    let ended = |r: &MergeRecord| r.state.is_final();
    let answer = match (until_end, ended(&answer)) {
        (true, false) => {
            let week = Duration::from_secs(7 * 24 * 3600);
            let end = await_record(&api, agent, seq, week, ended).await?;
            let Some(end) = end else { return Ok(()) };
            println!("{}", line(&end));
            end
        }
        _ => answer,
    };
    match answer.state {
        MergeState::Queued | MergeState::Merging | MergeState::Merged => Ok(()),
        _ => Err(Error::Refused(format!(
            "merge #{seq} {:?}: {}",
            answer.state,
            answer.reason.unwrap_or_default()
        ))),
    }
}

/// `overseer merge`: what became of `agent`'s requests.
pub async fn status(namespace: Option<&str>, agent: &str) -> Result<()> {
    let api = agents(namespace).await?;
    let current = own_status(&api, "read the merges of", agent).await?;
    let ledger = current.status.and_then(|s| s.merges).unwrap_or_default();
    if ledger.records.is_empty() {
        println!("no merge requests");
    }
    for record in &ledger.records {
        println!("{}", line(record));
    }
    Ok(())
}

/// The record of request `seq` once it answers `done`, within `wait` (None: not yet).
async fn await_record(
    api: &Api<Agent>,
    agent: &str,
    seq: i64,
    wait: Duration,
    done: impl Fn(&MergeRecord) -> bool,
) -> Result<Option<MergeRecord>> {
    await_own_status(api, ("read the merges of", agent), (wait, POLL), |status| {
        let ledger = status.merges.unwrap_or_default();
        ledger.records.into_iter().find(|r| r.seq == seq && done(r))
    })
    .await
}

fn line(record: &MergeRecord) -> String {
    let reason = record
        .reason
        .as_deref()
        .map(|r| format!(": {r}"))
        .unwrap_or_default();
    format!(
        "merge #{} of {}: {:?}{reason}",
        record.seq, record.sha, record.state
    )
}

/// `overseer merge land`, in a merge queue's pod: runs the attempt in the current
/// directory (empty) and writes its outcome to the termination message; the process
/// exits 0 whatever the outcome, which is the report.
pub fn land() -> Result<()> {
    use crate::workspace::land::{Job, land};
    let job = Job::from_env()?;
    let dir = std::env::current_dir()?;
    let landing = land(&dir, &job);
    let report = serde_json::to_string(&landing)?;
    println!("{report}");
    std::fs::write(crate::step::termination_log(), &report)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_continue_after_the_answered_and_only_a_pushed_head_is_asked_for() {
        let now = Timestamp::from_second(1_800_000_000).unwrap();
        let sha = "a".repeat(40);
        let mut status = AgentStatus::default();
        status.merge_requests = requests(&status, "overseer/a", &sha, now).unwrap();
        status.merges = serde_json::from_value(json!({"answered": 1, "records": [
            {"seq": 1, "sha": sha, "state": "Merged", "time": "2027-01-15T08:00:00Z"}]}))
        .unwrap();
        let next = requests(&status, "overseer/a", &sha, now).unwrap();
        assert_eq!(next.iter().map(|r| r.seq).collect::<Vec<_>>(), [2]);

        let dir = std::env::temp_dir().join(format!("overseer-merge-cli-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let sh = |script: &str| {
            let ok = Command::new("sh")
                .args(["-c", script])
                .current_dir(&dir)
                .env("GIT_AUTHOR_NAME", "m")
                .env("GIT_AUTHOR_EMAIL", "m@x")
                .env("GIT_COMMITTER_NAME", "m")
                .env("GIT_COMMITTER_EMAIL", "m@x")
                .status()
                .unwrap();
            assert!(ok.success(), "{script}");
        };
        sh(
            "git init --quiet --bare -b main origin.git && git clone --quiet origin.git work 2>/dev/null && cd work && git checkout --quiet -b overseer/a && echo 1 > f && git add f && git commit --quiet -m one",
        );
        let work = dir.join("work");
        let refused = pushed_head(&work).unwrap_err();
        assert!(refused.to_string().contains("push first"), "{refused}");
        assert_eq!(refused.exit_code(), 1);
        sh("cd work && git push --quiet origin overseer/a");
        let (branch, head) = pushed_head(&work).unwrap();
        assert_eq!((branch.as_str(), head.len()), ("overseer/a", 40));
        sh("cd work && echo 2 > f && git commit --quiet -am two");
        assert!(pushed_head(&work).is_err(), "a commit not pushed");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
