//! GitHub: the one GraphQL query a poll makes (validated against GitHub's published
//! schema in tests/prwatch.rs), the response as we read it, and the HTTPS request
//! with GitHub's rate-limit answers. Bodies of reviews and comments are never
//! requested: nothing anyone wrote can reach a wake message.

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use jiff::Timestamp;
use serde::Deserialize;

use crate::duration;
use crate::https::HttpsClient;

/// How long a rate limit waits when GitHub does not say.
const RATE_LIMIT_DEFAULT: Duration = Duration::from_secs(60);

/// The poll: the PR's state and head, the head's check rollup and contexts (first
/// page), reviews, PR comments, the last 50 review threads with their last inline
/// comments, the token's own login and the rate limit.
pub const QUERY: &str = r#"query PullRequestWatch($owner: String!, $repo: String!, $number: Int!) {
  viewer { login }
  rateLimit { remaining resetAt }
  repository(owner: $owner, name: $repo) {
    pullRequest(number: $number) {
      state
      headRefOid
      commits(last: 1) {
        nodes {
          commit {
            oid
            statusCheckRollup {
              state
              contexts(first: 100) {
                totalCount
                pageInfo { hasNextPage }
                nodes {
                  __typename
                  ... on CheckRun { name status conclusion }
                  ... on StatusContext { context state }
                }
              }
            }
          }
        }
      }
      reviews(last: 50) {
        nodes { id author { login } state submittedAt url }
      }
      comments(last: 50) {
        nodes { id author { login } createdAt url }
      }
      reviewThreads(last: 50) {
        nodes {
          comments(last: 5) {
            nodes { id author { login } path line originalLine createdAt url }
          }
        }
      }
    }
  }
}"#;

/// The pull request `https://HOST/OWNER/REPO/pull/N`.
#[derive(Debug, Clone, PartialEq)]
pub struct PullRequest {
    pub owner: String,
    pub repo: String,
    pub number: i64,
}

impl PullRequest {
    pub fn parse(url: &str) -> Option<PullRequest> {
        let rest = url.strip_prefix("https://")?;
        let mut parts = rest.trim_end_matches('/').split('/');
        let (_host, owner, repo, pull, number) = (
            parts.next()?,
            parts.next()?,
            parts.next()?,
            parts.next()?,
            parts.next()?,
        );
        if pull != "pull" || parts.next().is_some() {
            return None;
        }
        Some(PullRequest {
            owner: owner.into(),
            repo: repo.into(),
            number: number.parse().ok()?,
        })
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct Response {
    pub data: Option<Data>,
    #[serde(default)]
    pub errors: Vec<GraphqlError>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct GraphqlError {
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub message: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Data {
    pub viewer: Viewer,
    pub rate_limit: Option<RateLimit>,
    pub repository: Option<Repository>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Viewer {
    pub login: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RateLimit {
    pub remaining: i64,
    pub reset_at: Timestamp,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Repository {
    pub pull_request: Option<PullRequestData>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PullRequestData {
    pub state: String,
    pub head_ref_oid: String,
    pub commits: Nodes<CommitNode>,
    pub reviews: Nodes<Review>,
    pub comments: Nodes<IssueComment>,
    pub review_threads: Nodes<Thread>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Nodes<T> {
    #[serde(default = "Vec::new")]
    pub nodes: Vec<Option<T>>,
}

impl<T> Nodes<T> {
    fn items(&self) -> impl Iterator<Item = &T> {
        self.nodes.iter().flatten()
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct CommitNode {
    pub commit: Commit,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Commit {
    pub oid: String,
    pub status_check_rollup: Option<Rollup>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Rollup {
    pub state: String,
    pub contexts: Contexts,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Contexts {
    pub total_count: i64,
    pub page_info: PageInfo,
    #[serde(default)]
    pub nodes: Vec<Option<Context>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageInfo {
    pub has_next_page: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "__typename")]
pub enum Context {
    CheckRun {
        name: String,
        status: String,
        conclusion: Option<String>,
    },
    StatusContext {
        context: String,
        state: String,
    },
}

#[derive(Debug, Clone, Deserialize)]
pub struct Author {
    pub login: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Review {
    pub id: String,
    pub author: Option<Author>,
    pub state: String,
    pub submitted_at: Option<Timestamp>,
    pub url: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IssueComment {
    pub id: String,
    pub author: Option<Author>,
    pub created_at: Timestamp,
    pub url: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Thread {
    pub comments: Nodes<InlineComment>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InlineComment {
    pub id: String,
    pub author: Option<Author>,
    pub path: String,
    pub line: Option<i64>,
    pub original_line: Option<i64>,
    pub created_at: Timestamp,
    pub url: String,
}

/// One check of the head commit as the decision sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub name: String,
    pub complete: bool,
    pub failed: bool,
}

/// One piece of feedback (a review, a PR comment, an inline comment).
#[derive(Debug, Clone, PartialEq)]
pub struct Feedback {
    /// GitHub's node id: a stable key.
    pub id: String,
    pub kind: FeedbackKind,
    /// Raw login (checked when it is shown).
    pub author: Option<String>,
    pub time: Timestamp,
    /// `path` and line of an inline comment.
    pub location: Option<(String, Option<i64>)>,
    pub url: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeedbackKind {
    Review,
    Comment,
    Inline,
}

/// What one poll saw.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub viewer: String,
    /// OPEN, CLOSED or MERGED.
    pub state: String,
    pub head_sha: String,
    /// The rollup of the head commit: None when it has no checks at all.
    pub rollup_state: Option<String>,
    pub checks: Vec<Check>,
    /// More checks than the first page holds.
    pub more_checks: bool,
    pub feedback: Vec<Feedback>,
    /// The token's GraphQL points left this hour, when GitHub said.
    pub rate_limit_remaining: Option<i64>,
}

/// Why a poll gave nothing to decide on.
#[derive(Debug, Clone, PartialEq)]
pub enum PollError {
    /// GitHub asked us to wait (primary or secondary limit): not a failed poll.
    RateLimited {
        until: Timestamp,
        why: String,
    },
    Failed(String),
}

/// Reads a response body into a snapshot.
pub fn parse(body: &[u8], now: Timestamp) -> Result<Snapshot, PollError> {
    let response: Response = serde_json::from_slice(body)
        .map_err(|e| PollError::Failed(format!("unreadable GraphQL response: {e}")))?;
    if let Some(error) = response.errors.first() {
        if error.kind.as_deref() == Some("RATE_LIMITED") {
            let until = response
                .data
                .as_ref()
                .and_then(|d| d.rate_limit.as_ref())
                .map_or(duration::later(now, RATE_LIMIT_DEFAULT), |r| r.reset_at);
            return Err(PollError::RateLimited {
                until,
                why: "GraphQL RATE_LIMITED".into(),
            });
        }
        return Err(PollError::Failed(format!(
            "GraphQL error {}: {}",
            error.kind.as_deref().unwrap_or("?"),
            error.message.chars().take(200).collect::<String>()
        )));
    }
    let data = response
        .data
        .ok_or_else(|| PollError::Failed("GraphQL response without data".into()))?;
    let pr = data
        .repository
        .and_then(|r| r.pull_request)
        .ok_or_else(|| {
            PollError::Failed("no such pull request (or the token cannot see it)".into())
        })?;
    let head = pr.commits.items().last().map(|c| c.commit.clone());
    let rollup = head.as_ref().and_then(|c| c.status_check_rollup.clone());
    let checks = rollup
        .as_ref()
        .map(|r| r.contexts.nodes.iter().flatten().map(check).collect())
        .unwrap_or_default();
    let more_checks = rollup.as_ref().is_some_and(|r| {
        r.contexts.page_info.has_next_page || r.contexts.total_count > r.contexts.nodes.len() as i64
    });
    let feedback = feedback(&pr);
    Ok(Snapshot {
        rate_limit_remaining: data.rate_limit.as_ref().map(|r| r.remaining),
        viewer: data.viewer.login,
        state: pr.state,
        head_sha: head.map_or(pr.head_ref_oid.clone(), |c| c.oid),
        rollup_state: rollup.map(|r| r.state),
        checks,
        more_checks,
        feedback,
    })
}

/// The pull request's reviews (submitted ones), comments and inline review comments,
/// each as who wrote it, when and where: never its text.
fn feedback(pr: &PullRequestData) -> Vec<Feedback> {
    let mut feedback = Vec::new();
    for review in pr.reviews.items() {
        // A pending review (not submitted) is nobody's feedback yet.
        let Some(time) = review.submitted_at.filter(|_| review.state != "PENDING") else {
            continue;
        };
        feedback.push(Feedback {
            id: review.id.clone(),
            kind: FeedbackKind::Review,
            author: review.author.as_ref().map(|a| a.login.clone()),
            time,
            location: None,
            url: review.url.clone(),
        });
    }
    for comment in pr.comments.items() {
        feedback.push(Feedback {
            id: comment.id.clone(),
            kind: FeedbackKind::Comment,
            author: comment.author.as_ref().map(|a| a.login.clone()),
            time: comment.created_at,
            location: None,
            url: comment.url.clone(),
        });
    }
    for thread in pr.review_threads.items() {
        for inline in thread.comments.items() {
            feedback.push(Feedback {
                id: inline.id.clone(),
                kind: FeedbackKind::Inline,
                author: inline.author.as_ref().map(|a| a.login.clone()),
                time: inline.created_at,
                location: Some((inline.path.clone(), inline.line.or(inline.original_line))),
                url: inline.url.clone(),
            });
        }
    }
    feedback
}

fn check(context: &Context) -> Check {
    match context {
        Context::CheckRun {
            name,
            status,
            conclusion,
        } => Check {
            name: name.clone(),
            complete: status == "COMPLETED",
            failed: matches!(
                conclusion.as_deref(),
                Some("FAILURE" | "TIMED_OUT" | "CANCELLED" | "ACTION_REQUIRED" | "STARTUP_FAILURE")
            ),
        },
        Context::StatusContext { context, state } => Check {
            name: context.clone(),
            complete: !matches!(state.as_str(), "PENDING" | "EXPECTED"),
            failed: matches!(state.as_str(), "FAILURE" | "ERROR"),
        },
    }
}

/// What GitHub's HTTP answer says about waiting: a primary limit (403/429 with
/// `x-ratelimit-remaining: 0`, until `x-ratelimit-reset`) or a secondary one
/// (`retry-after` seconds, or one minute when it gives no time).
pub fn rate_limit_of(
    status: u16,
    header: impl Fn(&str) -> Option<String>,
    now: Timestamp,
) -> Option<PollError> {
    if status != 403 && status != 429 {
        return None;
    }
    if let Some(seconds) = header("retry-after").and_then(|v| v.trim().parse::<u64>().ok()) {
        return Some(PollError::RateLimited {
            until: duration::later(now, Duration::from_secs(seconds)),
            why: format!("secondary rate limit (retry-after {seconds}s)"),
        });
    }
    if header("x-ratelimit-remaining").as_deref() == Some("0") {
        let until = header("x-ratelimit-reset")
            .and_then(|v| v.trim().parse::<i64>().ok())
            .and_then(|s| Timestamp::from_second(s).ok())
            .unwrap_or(duration::later(now, RATE_LIMIT_DEFAULT));
        return Some(PollError::RateLimited {
            until,
            why: "primary rate limit exhausted".into(),
        });
    }
    (status == 429).then(|| PollError::RateLimited {
        until: duration::later(now, RATE_LIMIT_DEFAULT),
        why: "secondary rate limit".into(),
    })
}

/// The largest answer read from the API (a poll's is tens of kilobytes).
const MAX_RESPONSE_BYTES: usize = 4 << 20;

/// Whether the pull request at `pr_url` is served by the API at `api_url`: a github.com
/// pull request by whichever API the watch names (GitHub's, or a stand-in), a GitHub
/// Enterprise one only by its own server's API (`https://HOST/api/graphql`), so a watch
/// that forgot its `apiURL` never asks github.com about a same-named repository.
pub fn served_by(pr_url: &str, api_url: &str) -> Result<(), String> {
    let host = |url: &str| {
        url.parse::<http::Uri>()
            .ok()
            .and_then(|u| u.host().map(str::to_ascii_lowercase))
    };
    let pr_host = host(pr_url).unwrap_or_default();
    if pr_host == "github.com" || pr_host == "www.github.com" {
        return Ok(());
    }
    match host(api_url) {
        Some(api_host) if api_host == pr_host => Ok(()),
        _ => Err(format!(
            "the pull request is on {pr_host}, and apiURL {api_url:?} is not that server's API: a GitHub Enterprise watch sets github.apiURL to https://{pr_host}/api/graphql"
        )),
    }
}

/// The origin (`scheme://host[:port]`) of `api_url`, the label of its metrics: an
/// allowed origin, so the label's values are as few as `--github-api-origin` lists.
pub fn origin(api_url: &str) -> String {
    api_url
        .parse::<http::Uri>()
        .ok()
        .and_then(|uri| Some(format!("{}://{}", uri.scheme_str()?, uri.authority()?)))
        .unwrap_or_default()
}

/// Whether `api_url` lies at one of the `allowed` origins (`scheme://host[:port]`):
/// the same scheme and host (case-insensitive), and the port when the origin names
/// one. No user info, so the host is what it seems.
pub fn allowed_endpoint(api_url: &str, allowed: &[String]) -> Result<(), String> {
    let refused = || {
        format!(
            "apiURL {api_url:?} is not at an API origin this operator allows ({}); an administrator lists GitHub Enterprise servers with --github-api-origin",
            allowed.join(", ")
        )
    };
    let uri: http::Uri = api_url.parse().map_err(|_| refused())?;
    let authority = uri.authority().ok_or_else(refused)?;
    if authority.as_str().contains('@') {
        return Err(refused());
    }
    let fits = |origin: &String| {
        let Ok(origin) = origin.parse::<http::Uri>() else {
            return false;
        };
        origin.scheme() == uri.scheme()
            && origin
                .host()
                .is_some_and(|h| h.eq_ignore_ascii_case(authority.host()))
            && origin
                .port_u16()
                .is_none_or(|p| Some(p) == authority.port_u16())
    };
    if allowed.iter().any(fits) {
        Ok(())
    } else {
        Err(refused())
    }
}

/// The HTTPS client of every poll: the TLS root store is read once, and connections to
/// an API origin are kept and reused between polls (a new client per poll read the
/// roots and made a TLS handshake every time).
#[derive(Clone)]
pub struct GitHub {
    client: Result<HttpsClient, String>,
}

impl GitHub {
    pub fn new() -> GitHub {
        let client = crate::https::client(|builder| {
            builder.pool_idle_timeout(Duration::from_secs(90));
        });
        GitHub { client }
    }

    /// Makes the poll: one POST of `QUERY` to `api_url` with the token.
    #[tracing::instrument(skip_all)]
    pub async fn poll(
        &self,
        api_url: &str,
        token: &str,
        pr: &PullRequest,
    ) -> Result<Snapshot, PollError> {
        let client = self
            .client
            .as_ref()
            .map_err(|e| PollError::Failed(e.clone()))?;
        poll(client, api_url, token, pr).await
    }
}

impl Default for GitHub {
    fn default() -> GitHub {
        GitHub::new()
    }
}

async fn poll(
    client: &HttpsClient,
    api_url: &str,
    token: &str,
    pr: &PullRequest,
) -> Result<Snapshot, PollError> {
    let payload = serde_json::json!({
        "query": QUERY,
        "variables": {"owner": pr.owner, "repo": pr.repo, "number": pr.number},
    });
    let request = http::Request::post(api_url)
        .header("content-type", "application/json")
        .header("user-agent", "overseer")
        .header("authorization", format!("bearer {token}"))
        .body(Full::new(Bytes::from(payload.to_string())))
        .map_err(|e| PollError::Failed(format!("invalid apiURL: {e}")))?;
    let response = tokio::time::timeout(Duration::from_secs(30), client.request(request))
        .await
        .map_err(|_| PollError::Failed("GitHub did not answer in 30s".into()))?
        .map_err(|e| PollError::Failed(format!("GitHub unreachable: {e}")))?;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let now = Timestamp::now();
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(String::from)
    };
    if let Some(limited) = rate_limit_of(status, header, now) {
        return Err(limited);
    }
    let body = http_body_util::Limited::new(response.into_body(), MAX_RESPONSE_BYTES).collect();
    let body = tokio::time::timeout(Duration::from_secs(30), body)
        .await
        .map_err(|_| PollError::Failed("GitHub's answer did not end in 30s".into()))?
        .map_err(|e| PollError::Failed(format!("reading GitHub's answer: {e}")))?
        .to_bytes();
    if !(200..300).contains(&status) {
        return Err(PollError::Failed(format!("GitHub answered HTTP {status}")));
    }
    parse(&body, now)
}

#[cfg(test)]
mod tests {
    use super::{allowed_endpoint, served_by};

    #[test]
    fn an_enterprise_pull_request_is_polled_through_its_own_server() {
        let rows = [
            (
                "https://github.com/o/r/pull/1",
                "https://api.github.com/graphql",
                true,
            ),
            // The tests' stand-in for GitHub, and any allowed origin, serve github.com.
            (
                "https://github.com/o/r/pull/1",
                "http://127.0.0.1:40123/graphql",
                true,
            ),
            (
                "https://ghe.corp/o/r/pull/1",
                "https://ghe.corp/api/graphql",
                true,
            ),
            (
                "https://GHE.corp/o/r/pull/1",
                "https://ghe.corp:8443/api/graphql",
                true,
            ),
            (
                "https://ghe.corp/o/r/pull/1",
                "https://api.github.com/graphql",
                false,
            ),
            (
                "https://ghe.corp/o/r/pull/1",
                "https://ghe.corp.evil/api/graphql",
                false,
            ),
        ];
        for (url, api, expected) in rows {
            let answer = served_by(url, api);
            assert_eq!(answer.is_ok(), expected, "{url} via {api}: {answer:?}");
        }
        let refused = served_by(
            "https://ghe.corp/o/r/pull/1",
            "https://api.github.com/graphql",
        );
        assert!(
            refused
                .unwrap_err()
                .contains("https://ghe.corp/api/graphql"),
            "the message says what to set"
        );
    }

    #[test]
    fn the_token_goes_only_to_an_allowed_origin() {
        let allowed = [
            "https://api.github.com".to_string(),
            "https://ghe.example.com:8443".to_string(),
            "http://127.0.0.1".to_string(),
        ];
        let rows = [
            ("https://api.github.com/graphql", true),
            ("https://API.GitHub.com/graphql", true),
            ("https://ghe.example.com:8443/api/graphql", true),
            ("http://127.0.0.1:40123/graphql", true),
            ("http://api.github.com/graphql", false),
            ("https://ghe.example.com/api/graphql", false),
            ("https://ghe.example.com:9443/api/graphql", false),
            ("https://api.github.com.evil.example/graphql", false),
            ("https://api.github.com@evil.example/graphql", false),
            ("https://evil.example/graphql", false),
            ("https://127.0.0.1/graphql", false),
            ("http://10.0.0.1/graphql", false),
            ("not a url", false),
            ("/graphql", false),
        ];
        for (url, expected) in rows {
            let answer = allowed_endpoint(url, &allowed);
            assert_eq!(answer.is_ok(), expected, "{url}: {answer:?}");
        }
        let refused = allowed_endpoint("https://evil.example/graphql", &allowed).unwrap_err();
        assert!(refused.contains("--github-api-origin"), "{refused}");
    }
}
