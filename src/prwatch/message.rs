//! The wake a PR watch types into its agent: fixed wording, and only failed check
//! names, comment authors, `path:line` and links. Each of those comes from GitHub
//! and may be written by anyone, so each is shown only when it holds nothing but its
//! legal characters, and is replaced by a fixed note otherwise.

use super::github::{Feedback, FeedbackKind};

/// Items listed in one wake at most; the rest are counted.
const MAX_ITEMS: usize = 10;

/// CI news of the head commit.
#[derive(Debug, Clone, PartialEq)]
pub struct CiNews {
    pub sha: String,
    /// `success` or `failure`.
    pub result: &'static str,
    pub failed: Vec<String>,
    pub total: usize,
}

/// A GitHub login (39 characters of letters, digits and dashes, or an app's
/// `name[bot]`), else None.
pub fn login(raw: &str) -> Option<&str> {
    let name = raw.strip_suffix("[bot]").unwrap_or(raw);
    let legal = !name.is_empty()
        && name.len() <= 39
        && !name.starts_with('-')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    legal.then_some(raw)
}

/// A repository path of plain characters (no `..`, no leading `/`), else None.
pub fn path(raw: &str) -> Option<&str> {
    let legal = !raw.is_empty()
        && raw.len() <= 200
        && !raw.starts_with('/')
        && !raw.split('/').any(|part| part == "..")
        && raw
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/@+=,~-".contains(c));
    legal.then_some(raw)
}

/// A check name of plain characters, else None.
pub fn check_name(raw: &str) -> Option<&str> {
    let legal = !raw.trim().is_empty()
        && raw.len() <= 100
        && raw.trim() == raw
        && raw
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || " ._()/:+,#-".contains(c));
    legal.then_some(raw)
}

/// What stands for a check name that is not made of plain characters.
pub const CHECK_NAME_NOT_SHOWN: &str = "(check name not shown: unusual characters)";

/// Failed check names as status keeps them: plain names only (the rest replaced by
/// the fixed note), at most `MAX_ITEMS`, then a count of the others. Status is read
/// by people and overseers, so it holds no free text from GitHub either.
pub fn failed_checks_for_status(failed: &[String]) -> Vec<String> {
    let mut names: Vec<String> = failed
        .iter()
        .take(MAX_ITEMS)
        .map(|n| check_name(n).unwrap_or(CHECK_NAME_NOT_SHOWN).to_string())
        .collect();
    if failed.len() > MAX_ITEMS {
        names.push(format!("(and {} more)", failed.len() - MAX_ITEMS));
    }
    names
}

/// A link to something on this pull request (`<pr>#<anchor>`), else None.
pub fn link<'a>(pr_url: &str, raw: &'a str) -> Option<&'a str> {
    let anchor = raw.strip_prefix(pr_url)?.strip_prefix('#')?;
    let legal = !anchor.is_empty()
        && anchor.len() <= 64
        && anchor
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    legal.then_some(raw)
}

fn short_sha(sha: &str) -> &str {
    let hex = sha.len() >= 7 && sha.chars().all(|c| c.is_ascii_hexdigit());
    if hex {
        &sha[..sha.len().min(12)]
    } else {
        "(unusual sha)"
    }
}

fn item(pr_url: &str, feedback: &Feedback) -> String {
    let author = feedback
        .author
        .as_deref()
        .and_then(login)
        .unwrap_or("(login not shown: unusual characters)");
    let what = match feedback.kind {
        FeedbackKind::Review => format!("review by {author}"),
        FeedbackKind::Comment => format!("comment by {author}"),
        FeedbackKind::Inline => {
            let place = match &feedback.location {
                Some((file, line)) => match path(file) {
                    Some(file) => match line {
                        Some(line) => format!("{file}:{line}"),
                        None => file.to_string(),
                    },
                    None => "(path not shown: unusual characters)".to_string(),
                },
                None => "(no path)".to_string(),
            };
            format!("inline comment by {author} at {place}")
        }
    };
    let url = link(pr_url, &feedback.url).unwrap_or(pr_url);
    format!("- {what}: {url}\n")
}

/// The wake: CI news and feedback (either may be absent, not both).
pub fn wake(pr_url: &str, ci: Option<&CiNews>, feedback: &[Feedback]) -> String {
    let mut out = format!(
        "[overseer] pr: news on {pr_url}. Only check names, logins, paths and links from GitHub appear below, each checked for plain characters; no comment or review text is quoted.\n"
    );
    if let Some(ci) = ci {
        out.push_str(&format!(
            "- CI on {} settled: {}",
            short_sha(&ci.sha),
            ci.result
        ));
        if !ci.failed.is_empty() {
            let names: Vec<String> = ci
                .failed
                .iter()
                .take(MAX_ITEMS)
                .map(|n| match check_name(n) {
                    // Quoted: a name cannot hold a quote, so it cannot leave them.
                    Some(name) => format!("\"{name}\""),
                    None => CHECK_NAME_NOT_SHOWN.to_string(),
                })
                .collect();
            out.push_str(&format!(
                "; failed checks ({} of {}): {}",
                ci.failed.len(),
                ci.total,
                names.join(", ")
            ));
            if ci.failed.len() > MAX_ITEMS {
                out.push_str(&format!(", and {} more", ci.failed.len() - MAX_ITEMS));
            }
        }
        out.push('\n');
    }
    if !feedback.is_empty() {
        out.push_str(&format!("- new feedback: {}\n", feedback.len()));
        for entry in feedback.iter().take(MAX_ITEMS) {
            out.push_str(&item(pr_url, entry));
        }
        if feedback.len() > MAX_ITEMS {
            out.push_str(&format!(
                "- and {} more on the PR\n",
                feedback.len() - MAX_ITEMS
            ));
        }
    }
    out.push_str("Read it on GitHub, address it, push, and keep going until the PR is merged.\n");
    out
}

/// Tells the agent the watch gave up polling.
pub fn failing(pr_url: &str, failed_polls: i32) -> String {
    format!(
        "[overseer] pr: watching {pr_url} failed {failed_polls} polls in a row, so the watch has stopped. \
         Check the PR yourself; `kubectl get prwatch` shows why it failed.\n"
    )
}

#[cfg(test)]
#[path = "message_tests.rs"]
mod tests;
