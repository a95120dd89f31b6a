//! Role inference for steps that name no role, from keywords in the action.

/// Who carries out a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Performer {
    /// A step pod whose agent has this role.
    Role(String),
    /// The operator sends the notification itself; no pod.
    Notify,
}

/// Keywords per role, as DESIGN.md's table lists them.
const KEYWORDS: &[(&str, &[&str])] = &[
    (
        "scout",
        &[
            "research",
            "analyze",
            "analyse",
            "investigate",
            "find",
            "survey",
            "audit",
        ],
    ),
    (
        "scraper",
        &["web", "scrape", "fetch", "search the internet"],
    ),
    (
        "builder",
        &[
            "implement",
            "write",
            "build",
            "code",
            "create",
            "refactor",
            "fix",
        ],
    ),
    (
        "guardian",
        &[
            "test",
            "tests",
            "validate",
            "verify",
            "check quality",
            "run tests",
        ],
    ),
    ("designer", &["design", "layout", "ui", "component"]),
    ("builder", &["deploy", "push", "release", "commit"]),
    ("notify", &["notify", "message", "send an alert"]),
];

/// The keyword that appears first in the action decides: an action usually starts
/// with its verb ("Write a test" is building, "Run tests and fix" is guarding). At
/// the same position the longer keyword wins. No keyword: builder.
pub fn infer(action: &str) -> Performer {
    infer_from_keywords(action).unwrap_or_else(|| Performer::Role("builder".into()))
}

/// The performer a keyword of the action names, or None when no keyword appears.
fn infer_from_keywords(action: &str) -> Option<Performer> {
    let text = action.to_lowercase();
    let mut best: Option<(usize, usize, &str)> = None;
    for (role, keywords) in KEYWORDS {
        for keyword in *keywords {
            if let Some(position) = find_word(&text, keyword) {
                let better = match best {
                    None => true,
                    Some((p, len, _)) => position < p || (position == p && keyword.len() > len),
                };
                if better {
                    best = Some((position, keyword.len(), role));
                }
            }
        }
    }
    best.map(|(_, _, role)| match role {
        "notify" => Performer::Notify,
        role => Performer::Role(role.into()),
    })
}

/// Position of `word` in `text` as a whole word (or phrase).
fn find_word(text: &str, word: &str) -> Option<usize> {
    let is_word_char = |c: char| c.is_alphanumeric();
    text.match_indices(word).map(|(i, _)| i).find(|&i| {
        let before = text[..i]
            .chars()
            .next_back()
            .is_none_or(|c| !is_word_char(c));
        let after = text[i + word.len()..]
            .chars()
            .next()
            .is_none_or(|c| !is_word_char(c));
        before && after
    })
}

/// The performer of a step: its own role, else the inferred one, where the goal's
/// default role replaces the fallback builder.
pub fn performer(step_role: Option<&str>, action: &str, default_role: Option<&str>) -> Performer {
    if let Some(role) = step_role {
        return Performer::Role(role.into());
    }
    infer_from_keywords(action)
        .unwrap_or_else(|| Performer::Role(default_role.unwrap_or("builder").into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inference_table() {
        let role = |r: &str| Performer::Role(r.into());
        let rows = [
            ("Research how billing computes invoices", role("scout")),
            ("Investigate the flaky test", role("scout")),
            ("Audit dependencies for licences", role("scout")),
            ("Scrape the pricing page", role("scraper")),
            ("Search the internet for prior art", role("scraper")),
            ("Implement proration", role("builder")),
            ("Write a test for proration", role("builder")),
            ("Refactor the invoice module", role("builder")),
            ("Run tests and verify edge cases", role("guardian")),
            ("Validate the migration", role("guardian")),
            ("Check quality of the docs", role("guardian")),
            ("Design the settings page layout", role("designer")),
            ("Add a UI component for plans", role("designer")),
            ("Deploy to staging", role("builder")),
            ("Commit and push the branch", role("builder")),
            ("Notify the team that the build is green", Performer::Notify),
            ("Send an alert to on-call", Performer::Notify),
            ("Ponder the meaning of life", role("builder")),
            ("Prefix handling", role("builder")), // "fix" inside a word does not count
        ];
        for (action, expected) in rows {
            assert_eq!(infer(action), expected, "{action}");
        }
    }

    #[test]
    fn explicit_and_default_roles() {
        assert_eq!(
            performer(Some("reviewer"), "Implement it", None),
            Performer::Role("reviewer".into())
        );
        assert_eq!(
            performer(None, "Ponder", Some("scout")),
            Performer::Role("scout".into())
        );
        assert_eq!(
            performer(None, "Implement it", Some("scout")),
            Performer::Role("builder".into())
        );
    }
}
