//! File claims, as fields of the Swarm and Agent kinds: a member's requests (`overseer
//! claim`, in its own status), the operator's answers to them, and the swarm's list of
//! the claims held (its status, copied into a ConfigMap its members may read).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Paths one request may name.
pub const PATHS_PER_REQUEST: usize = 32;
/// The longest path kept.
pub const PATH_MAX: usize = 1024;

/// The ConfigMap holding a copy of swarm `swarm`'s claims (key `claims.json`), which
/// its members may read (`overseer claims`); the swarm's status is the record.
pub fn config_map_name(swarm: &str) -> String {
    format!(
        "{}-claims",
        crate::api::fit_name(swarm, 253 - "-claims".len())
    )
}

/// The ConfigMap key of the claims' copy.
pub const CONFIG_MAP_KEY: &str = "claims.json";

/// A member's request (`overseer claim`, field manager `overseer-claim`), kept in its
/// own status until the operator answers it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClaimRequest {
    /// Per member, increasing: the order its requests are answered in.
    pub seq: i64,
    /// Paths relative to the workspace (a directory claims what it holds). A release
    /// without paths releases every claim of the member.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32), inner(length(min = 1, max = 1024)))]
    pub paths: Vec<String>,
    /// Give the paths up instead of claiming them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub release: bool,
    pub time: Time,
}

/// The operator's answers to a member's claim requests (field manager
/// `overseer-claimer`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClaimLedger {
    /// The highest request seq answered.
    #[serde(default)]
    pub answered: i64,
    /// The latest answers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub records: Vec<ClaimRecord>,
}

/// What became of one claim request.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClaimRecord {
    pub seq: i64,
    pub state: ClaimState,
    /// Why it was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub reason: Option<String>,
    /// The claims of other members it met (a refusal's cause).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub held: Vec<Claim>,
    pub time: Time,
}

/// A claim request's answer.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum ClaimState {
    /// Every path is the member's now (or was already).
    Granted,
    /// Nothing was claimed: a path is another member's, or not a workspace path.
    Refused,
    /// The paths (or all its claims) are no longer the member's.
    Released,
}

/// One path a member holds.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Claim {
    /// Relative to the workspace; a directory holds everything under it.
    #[schemars(length(min = 1, max = 1024))]
    pub path: String,
    /// The member's Agent.
    #[schemars(length(max = 253))]
    pub holder: String,
    /// The holder's attempt when it claimed: the claim ends with it.
    pub attempt: i64,
    pub since: Time,
}

/// `path` as a claim keeps it (relative to the workspace, `/`-separated, no `.`, `..`
/// or empty segments), or why it is not a workspace path. Decided alike by the CLI
/// and the operator (a member writes its own status: the operator checks again).
pub fn normal_path(path: &str) -> Result<String, String> {
    if path.len() > PATH_MAX {
        return Err(format!("longer than {PATH_MAX} bytes"));
    }
    if path.starts_with('/') {
        return Err("not relative to the workspace".into());
    }
    let mut segments: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if segments.pop().is_none() {
                    return Err("outside the workspace".into());
                }
            }
            other => segments.push(other),
        }
    }
    if segments.is_empty() {
        return Err("the whole workspace (name the files or directories)".into());
    }
    if path.chars().any(char::is_control) {
        return Err("holds a control character".into());
    }
    Ok(segments.join("/"))
}

/// Whether two normal paths overlap: the same, or one a directory holding the other.
pub fn overlap(a: &str, b: &str) -> bool {
    let under = |inner: &str, outer: &str| {
        inner
            .strip_prefix(outer)
            .is_some_and(|rest| rest.starts_with('/'))
    };
    a == b || under(a, b) || under(b, a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_kept_relative_and_inside_and_overlap_by_directory() {
        let cases = [
            ("src/main.rs", Ok("src/main.rs")),
            ("./src//lib.rs", Ok("src/lib.rs")),
            ("src/../docs/a.md", Ok("docs/a.md")),
            ("src/", Ok("src")),
            ("../etc/passwd", Err("outside the workspace")),
            ("a/../../b", Err("outside the workspace")),
            ("/etc/passwd", Err("not relative to the workspace")),
            (
                ".",
                Err("the whole workspace (name the files or directories)"),
            ),
            ("a\u{1b}b", Err("holds a control character")),
        ];
        for (path, want) in cases {
            let want = want.map(str::to_string).map_err(str::to_string);
            assert_eq!(normal_path(path), want, "{path}");
        }
        assert!(overlap("src", "src/main.rs"));
        assert!(overlap("src/main.rs", "src"));
        assert!(overlap("a", "a"));
        assert!(!overlap("src", "src2/x"));
        assert!(!overlap("src/a.rs", "src/b.rs"));
    }
}
