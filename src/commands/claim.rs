//! `overseer claim PATH...`, `overseer claim --release [PATH...]` and `overseer claims`,
//! in a swarm member's pod: claims files of the workspace so that no two members edit
//! the same one. A claim is a request in the member's own status, answered by the
//! operator against the swarm's claims (`src/swarm/claims.rs`): granted, or refused
//! with the holder and since when (exit 1). `overseer claims` reads the swarm's claims
//! from the copy its members may read.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{Api, ResourceExt};
use serde_json::json;

use super::access::{agents, await_own_status, own_status, queue_next, queue_onto_version};
use crate::kinds::agent::AgentStatus;
use crate::kinds::claim::{
    CONFIG_MAP_KEY, Claim, ClaimRecord, ClaimRequest, ClaimState, PATHS_PER_REQUEST,
    config_map_name, normal_path,
};
use crate::{Error, Result};

const CLAIM_MANAGER: &str = "overseer-claim";
/// Requests kept at once, at most (the schema's limit).
const REQUESTS_LIMIT: usize = 8;
const POLL: Duration = Duration::from_millis(300);

/// `path` relative to the workspace `workspace`, as a claim names it: an absolute path
/// must lie in the workspace; a relative one is taken from `cwd` when that is in the
/// workspace, else from the workspace itself. The error names the path.
pub fn workspace_path(path: &str, cwd: &Path, workspace: &Path) -> Result<String> {
    let outside = |why: &str| Error::Usage(format!("PATH {path:?}: {why}"));
    let joined: PathBuf = if Path::new(path).is_absolute() {
        PathBuf::from(path)
    } else if cwd.starts_with(workspace) {
        cwd.join(path)
    } else {
        workspace.join(path)
    };
    // Lexically, so that a file not made yet can be claimed.
    let mut normal = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    let relative = normal
        .strip_prefix(workspace)
        .map_err(|_| outside(&format!("outside the workspace {}", workspace.display())))?;
    let text = relative
        .to_str()
        .ok_or_else(|| outside("not valid UTF-8"))?;
    normal_path(text).map_err(|why| outside(&why))
}

/// The requests after adding one: those not answered yet, and the new one.
fn requests(
    status: &AgentStatus,
    paths: Vec<String>,
    release: bool,
    now: Timestamp,
) -> Result<Vec<ClaimRequest>> {
    let ledger = status.claims.as_ref();
    let busy =
        format!("{REQUESTS_LIMIT} claim requests wait to be answered already; try again shortly");
    queue_next(
        &status.claim_requests,
        ledger.map_or(0, |l| l.answered),
        ledger.iter().flat_map(|l| &l.records).map(|r| r.seq),
        (REQUESTS_LIMIT, &busy),
        |seq| ClaimRequest {
            seq,
            paths,
            release,
            time: Time(now),
        },
    )
}

/// `overseer claim PATH...` (or `--release`): writes the request and prints the
/// answer; a refusal is exit 1.
pub async fn claim(
    namespace: Option<&str>,
    agent: &str,
    paths: &[String],
    release: bool,
    wait: Duration,
) -> Result<()> {
    if paths.is_empty() && !release {
        return Err(Error::Usage("name at least one PATH to claim".into()));
    }
    if paths.len() > PATHS_PER_REQUEST {
        return Err(Error::Usage(format!(
            "at most {PATHS_PER_REQUEST} paths at once"
        )));
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from(crate::workspace::DIR));
    let workspace = Path::new(crate::workspace::DIR);
    let paths = paths
        .iter()
        .map(|p| workspace_path(p, &cwd, workspace))
        .collect::<Result<Vec<_>>>()?;
    let api = agents(namespace).await?;
    let action = ("claim files as", CLAIM_MANAGER);
    let seq = queue_onto_version(&api, agent, action, |status| {
        let requests = requests(status, paths.clone(), release, Timestamp::now())?;
        let seq = requests.last().map_or(0, |r| r.seq);
        Ok((json!({"claimRequests": requests}), seq))
    })
    .await?
    .ok_or_else(|| {
        Error::Busy(format!(
            "{agent} changed too often to queue the request; try again"
        ))
    })?;
    let found = await_own_status(&api, ("read the claims of", agent), (wait, POLL), |s| {
        s.claims?.records.into_iter().find(|r| r.seq == seq)
    })
    .await?;
    let Some(record) = found else {
        println!("claim request #{seq} queued; the operator answers as soon as it runs");
        return Ok(());
    };
    println!("{}", line(&record, &paths));
    if record.state == ClaimState::Refused {
        return Err(Error::Refused(format!(
            "claim #{seq} refused: {}",
            record.reason.unwrap_or_default()
        )));
    }
    Ok(())
}

fn line(record: &ClaimRecord, paths: &[String]) -> String {
    let what = match paths {
        [] => "all your claims".to_string(),
        _ => paths.join(" "),
    };
    match record.state {
        ClaimState::Granted => format!("claimed: {what}"),
        ClaimState::Released => format!("released: {what}"),
        ClaimState::Refused => {
            let held: Vec<String> = record
                .held
                .iter()
                .map(|c| format!("  {} held by {} since {}", c.path, c.holder, c.since.0))
                .collect();
            format!("refused: {what}\n{}", held.join("\n"))
        }
    }
}

/// `overseer claims`: the claims of the member's swarm, one per line (path, holder,
/// since), from the copy its members may read.
pub async fn list(namespace: Option<&str>, agent: &str) -> Result<()> {
    let api = agents(namespace).await?;
    let me = own_status(&api, "read the swarm of", agent).await?;
    let Some(swarm) = me
        .owner_references()
        .iter()
        .find(|o| o.kind == "Swarm" && o.controller == Some(true))
        .map(|o| o.name.clone())
    else {
        return Err(Error::Usage(format!("{agent} is not a swarm's member")));
    };
    let maps: Api<ConfigMap> = Api::namespaced(
        api.clone().into_client(),
        &me.namespace().unwrap_or_default(),
    );
    let name = config_map_name(&swarm);
    let claims: Vec<Claim> = match maps.get_opt(&name).await {
        Ok(found) => found
            .and_then(|m| m.data?.remove(CONFIG_MAP_KEY))
            .map(|text| serde_json::from_str(&text))
            .transpose()
            .map_err(|e| Error::Usage(format!("the claims of {swarm} are not readable: {e}")))?
            .unwrap_or_default(),
        Err(kube::Error::Api(status)) if status.code == 403 => {
            return Err(Error::Refused(format!(
                "not allowed to read the claims of swarm {swarm}: {}",
                status.message
            )));
        }
        Err(error) => return Err(error.into()),
    };
    if claims.is_empty() {
        println!("no claims in swarm {swarm}");
    }
    for claim in claims {
        let mine = if claim.holder == agent {
            " (yours)"
        } else {
            ""
        };
        println!(
            "{}\t{}{mine}\tsince {}",
            claim.path, claim.holder, claim.since.0
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_taken_from_the_workspace_and_those_outside_it_refused_by_name() {
        let ws = Path::new("/workspace");
        let cases = [
            ("src/a.rs", "/workspace", Ok("src/a.rs")),
            ("a.rs", "/workspace/src", Ok("src/a.rs")),
            ("../docs", "/workspace/src", Ok("docs")),
            ("/workspace/src/x", "/tmp", Ok("src/x")),
            ("src/a.rs", "/home/me", Ok("src/a.rs")),
            (
                "/etc/passwd",
                "/workspace",
                Err("PATH \"/etc/passwd\": outside the workspace /workspace"),
            ),
            (
                "../../etc",
                "/workspace/src",
                Err("PATH \"../../etc\": outside the workspace /workspace"),
            ),
            (
                "/workspace",
                "/workspace",
                Err("PATH \"/workspace\": the whole workspace (name the files or directories)"),
            ),
        ];
        for (path, cwd, want) in cases {
            let got = workspace_path(path, Path::new(cwd), ws).map_err(|e| match e {
                Error::Usage(m) => m,
                other => format!("{other:?}"),
            });
            assert_eq!(
                got,
                want.map(str::to_string).map_err(str::to_string),
                "{path} in {cwd}"
            );
        }
    }

    #[test]
    fn requests_continue_after_the_answered_and_stop_at_the_limit() {
        let now = Timestamp::from_second(1_800_000_000).unwrap();
        let mut status = AgentStatus::default();
        status.claim_requests = requests(&status, vec!["a".into()], false, now).unwrap();
        status.claims = Some(crate::kinds::claim::ClaimLedger {
            answered: 1,
            records: Vec::new(),
        });
        let next = requests(&status, vec![], true, now).unwrap();
        assert_eq!(next.iter().map(|r| r.seq).collect::<Vec<_>>(), [2]);
        status.claim_requests = next;
        for _ in 0..REQUESTS_LIMIT - 1 {
            status.claim_requests = requests(&status, vec!["b".into()], false, now).unwrap();
        }
        let full = requests(&status, vec!["c".into()], false, now).unwrap_err();
        assert!(matches!(full, Error::Busy(_)), "{full:?}");
    }
}
