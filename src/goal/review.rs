//! The guardian review a goal gets after each step whose action deploys, pushes or
//! releases: a step of role guardian inserted after it, unless the goal opts out
//! (`spec.guardianReview: false`) or already has a step of that name. Pure: the
//! planner and the step pods work on the goal as expanded here, so the reviews have
//! checkpoints, retries and pods like any step.

use crate::kinds::goal::{Goal, Step};

/// Words of an action that make its step one to review.
const RISKY: &[&str] = &["deploy", "deploys", "push", "pushes", "release", "releases"];

/// The name of the review of step `step`.
pub fn review_name(step: &str) -> String {
    format!("{step}-review")
}

/// Whether `action` deploys, pushes or releases (one of `RISKY` as a whole word).
fn risky(action: &str) -> bool {
    action
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .any(|word| RISKY.contains(&word))
}

/// `goal` with a guardian review after each risky step.
pub fn with_reviews(goal: &Goal) -> Goal {
    if !goal.spec.guardian_review {
        return goal.clone();
    }
    let taken = |name: &str| goal.spec.steps.iter().any(|s| s.name == name);
    let mut steps = Vec::with_capacity(goal.spec.steps.len());
    let mut inserted: Vec<String> = Vec::new();
    for step in &goal.spec.steps {
        steps.push(step.clone());
        let name = review_name(&step.name);
        // A guardian's step, or a review (by name), is not reviewed again.
        let is_review = step.role.as_deref() == Some("guardian") || step.name.ends_with("-review");
        if is_review || !risky(&step.action) || taken(&name) || name.len() > 63 {
            continue;
        }
        inserted.push(name.clone());
        steps.push(Step {
            name,
            action: format!(
                "Review what step {} just did ({}). Check that it is correct, tested and safe to keep: \
                 read the changes and their effects, and run what verifies them. Report each problem \
                 with its evidence; exit non-zero if it must not stand.",
                step.name,
                step.action.chars().take(200).collect::<String>()
            ),
            role: Some("guardian".into()),
            runtime: step.runtime.clone(),
            timeout: step.timeout.clone(),
            max_retries: Some(0),
            pod_template: step.pod_template.clone(),
            // The step listed before it: the reviewed one, all its items.
            after: None,
            for_each: None,
            max_parallel: None,
        });
    }
    // A step that waits for a reviewed one waits for its review: none goes round it.
    for step in steps.iter_mut().filter(|s| !inserted.contains(&s.name)) {
        for name in step.after.iter_mut().flatten() {
            if inserted.contains(&review_name(name)) {
                *name = review_name(name);
            }
        }
    }
    let mut expanded = goal.clone();
    expanded.spec.steps = steps;
    expanded
}

#[cfg(test)]
mod tests {
    use super::*;

    fn goal(yaml: &str) -> Goal {
        serde_saphyr::from_str(&format!(
            "apiVersion: overseer.dev/v1alpha1\nkind: Goal\nmetadata: {{name: ship}}\nspec: {yaml}"
        ))
        .unwrap()
    }

    fn names(goal: &Goal) -> Vec<String> {
        goal.spec.steps.iter().map(|s| s.name.clone()).collect()
    }

    #[test]
    fn a_step_that_deploys_pushes_or_releases_is_reviewed_by_a_guardian() {
        // (case, the goal's spec, the steps it runs)
        let rows: &[(&str, &str, &[&str])] = &[
            (
                "deploy and push reviewed, the build not",
                "{steps: [{name: build, action: Build it}, {name: ship, action: Deploy to staging}, {name: tag, action: Push the tag}]}",
                &["build", "ship", "ship-review", "tag", "tag-review"],
            ),
            (
                "opted out",
                "{guardianReview: false, steps: [{name: ship, action: Deploy to staging}]}",
                &["ship"],
            ),
            (
                "a review of that name is there already",
                "{steps: [{name: ship, action: Release v2}, {name: ship-review, action: Check the release}]}",
                &["ship", "ship-review"],
            ),
            (
                "a guardian step is not reviewed again",
                "{steps: [{name: check, role: guardian, action: Verify the deploy}]}",
                &["check"],
            ),
            (
                "a word inside another is no keyword",
                "{steps: [{name: a, action: Document the pushback and releasedate fields}]}",
                &["a"],
            ),
        ];
        for (case, spec, expected) in rows {
            assert_eq!(names(&with_reviews(&goal(spec))), *expected, "{case}");
        }
        let expanded = with_reviews(&goal("{steps: [{name: ship, action: Deploy to staging}]}"));
        let review = &expanded.spec.steps[1];
        assert_eq!(review.role.as_deref(), Some("guardian"));
        assert!(
            review
                .action
                .starts_with("Review what step ship just did (Deploy to staging).")
        );
    }

    #[test]
    fn a_step_after_a_reviewed_one_waits_for_its_review() {
        let expanded = with_reviews(&goal(
            "{steps: [{name: ship, action: Deploy to staging}, {name: docs, action: Write docs, after: []}, \
             {name: tell, action: Announce it, after: [ship, docs]}]}",
        ));
        assert_eq!(names(&expanded), ["ship", "ship-review", "docs", "tell"]);
        let after = |i: usize| expanded.spec.steps[i].after.clone();
        assert_eq!(
            after(1),
            None,
            "the review: after the step listed before, ship"
        );
        assert_eq!(after(3), Some(vec!["ship-review".into(), "docs".into()]));
    }
}
