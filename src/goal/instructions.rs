//! What a step's agent is told besides its action: the swarm's base and its role's
//! profile (the swarm's, else the built-in one), and how a step ends. `overseer step`
//! places it in the workspace under the runtime's instruction file name.

use crate::agent::instructions::with_sections;
use crate::pods::BIN_DIR;
use crate::roles::role;
use crate::swarm::SwarmSpec;

/// Where `overseer step` writes the instructions before linking them into the
/// workspace (the pod's own `/overseer` directory).
pub const DIR: &str = "/overseer/instructions";

/// The instructions of step `step` of goal `goal`, run by an agent of `role`.
pub fn compose(goal: &str, step: &str, role_name: &str, swarm: Option<&SwarmSpec>) -> String {
    let out = format!(
        "# Instructions for step {step} of goal {goal} (role {role_name})\n\n\
         Composed by overseer: the swarm's base, the role's profile, then how a step ends.\n"
    );
    let sections = [
        (
            "Base".to_string(),
            swarm.and_then(|s| s.prompts.base.clone()),
        ),
        (format!("Role: {role_name}"), role(swarm, role_name).profile),
        (
            "This step".to_string(),
            Some(format!(
                "You carry out one step of a goal: the action you were given. This is not a loop: \
                 ignore any instruction above about `overseer loop` commands, and exit when the action is done.\n\
                 - The results of the earlier steps are in /overseer/results/results.json.\n\
                 - Store this step's result (at most 4 KiB) with `echo \"<result>\" | {BIN_DIR}/overseer result`; \
                 without it, the last 4 KiB of your output is the result.\n\
                 - Exit with a non-zero code when the action failed: the step is retried."
            )),
        ),
    ];
    with_sections(out, sections)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_gets_its_swarms_base_and_its_roles_profile_and_how_a_step_ends() {
        let swarm: SwarmSpec = serde_saphyr::from_str(
            "{roles: {reviewer: {profile: strict}}, prompts: {base: Work only in billing., profiles: {strict: Report every problem as path:line.}}}",
        )
        .unwrap();
        insta::assert_snapshot!(compose("ship", "review", "reviewer", Some(&swarm)), @r#"
        # Instructions for step review of goal ship (role reviewer)

        Composed by overseer: the swarm's base, the role's profile, then how a step ends.

        ## Base

        Work only in billing.

        ## Role: reviewer

        Report every problem as path:line.

        ## This step

        You carry out one step of a goal: the action you were given. This is not a loop: ignore any instruction above about `overseer loop` commands, and exit when the action is done.
        - The results of the earlier steps are in /overseer/results/results.json.
        - Store this step's result (at most 4 KiB) with `echo "<result>" | /overseer/bin/overseer result`; without it, the last 4 KiB of your output is the result.
        - Exit with a non-zero code when the action failed: the step is retried.
        "#);
        let alone = compose("ship", "survey", "scout", None);
        assert!(
            alone.contains("## Role: scout\n\nYou scout:"),
            "a built-in profile: {alone}"
        );
        assert!(!alone.contains("## Base"), "{alone}");
    }
}
