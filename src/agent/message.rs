//! The texts the operator delivers: the overseer's wake message and the canned
//! nudge. Fixed wording built from our own fields only (names are DNS labels, the
//! rest numbers): nothing an agent or anyone else wrote is ever quoted.

use std::time::Duration;

use super::candidate::Stop;
use crate::pods::BIN_DIR;

/// One agent the wake is about.
#[derive(Debug, Clone, PartialEq)]
pub struct WakeItem {
    pub agent: String,
    pub role: String,
    /// `idle`, `exited` or `unresponsive`.
    pub state: &'static str,
    /// How long it has been in that state, and the setting that makes it too long
    /// (`idleAfter`, or `reportEvery` for `unresponsive`).
    pub idle_for: Duration,
    pub idle_after: Duration,
    pub limit: &'static str,
    pub nudges: i32,
    pub max_nudges: i32,
    pub attempt: i64,
    pub pod: String,
}

/// The structured message that wakes an overseer about a batch of candidates.
pub fn wake(namespace: &str, items: &[WakeItem]) -> String {
    let mut out = format!(
        "[overseer] wake: {} agent(s) you oversee in namespace {namespace} stopped before declaring done or blocked.\n",
        items.len()
    );
    for item in items {
        out.push_str(&format!(
            "- agent={} role={} state={} for={}s {}={}s nudges={}/{} attempt={} pod={}\n",
            item.agent,
            item.role,
            item.state,
            item.idle_for.as_secs(),
            item.limit,
            item.idle_after.as_secs(),
            item.nudges,
            item.max_nudges,
            item.attempt,
            item.pod
        ));
    }
    out.push_str("Decide for each: give it direction to continue, or release it. This message quotes nothing the agents wrote.\n");
    out.push_str(&commands());
    out
}

/// The overseer's commands, as the wake message and the standing instructions list them.
pub fn commands() -> String {
    format!(
        "Commands:\n\
         \x20 {BIN_DIR}/overseer peek AGENT --lines 60\n\
         \x20 {BIN_DIR}/overseer send AGENT \"continue: <direction>\"\n\
         \x20 {BIN_DIR}/overseer loop release AGENT --reason \"<why>\"\n\
         \x20 {BIN_DIR}/overseer ps\n"
    )
}

/// The canned nudge sent to an agent directly (no overseer online).
pub fn nudge(stop: Stop, idle_for: Duration) -> String {
    if stop == Stop::Unresponsive {
        return format!(
            "[overseer] nudge: you have not reported progress for {}s. \
             Run: {BIN_DIR}/overseer loop progress \"<what you are doing now>\". \
             When your work is genuinely finished, run: {BIN_DIR}/overseer loop done --reason \"<what you did>\". \
             If you cannot go on without help, run: {BIN_DIR}/overseer loop block --reason \"<why>\".",
            idle_for.as_secs()
        );
    }
    format!(
        "[overseer] nudge: you have been {} for {}s without declaring your work done or blocked. \
         Continue with your task. When it is genuinely finished, run: {BIN_DIR}/overseer loop done --reason \"<what you did>\". \
         If you cannot go on without help, run: {BIN_DIR}/overseer loop block --reason \"<why>\".",
        stop.word(),
        idle_for.as_secs()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wake_message_has_a_fixed_shape() {
        let item = |agent: &str, state, idle_for, nudges| WakeItem {
            agent: agent.into(),
            role: "builder".into(),
            state,
            idle_for: Duration::from_secs(idle_for),
            idle_after: Duration::from_secs(60),
            limit: "idleAfter",
            nudges,
            max_nudges: 20,
            attempt: 2,
            pod: format!("{agent}-2"),
        };
        let silent = WakeItem {
            state: "unresponsive",
            idle_for: Duration::from_secs(610),
            idle_after: Duration::from_secs(600),
            limit: "reportEvery",
            ..item("builder-c", "", 0, 1)
        };
        insta::assert_snapshot!(wake("team", &[item("builder-a", "idle", 75, 0), item("builder-b", "exited", 301, 4), silent]), @r#"
        [overseer] wake: 3 agent(s) you oversee in namespace team stopped before declaring done or blocked.
        - agent=builder-a role=builder state=idle for=75s idleAfter=60s nudges=0/20 attempt=2 pod=builder-a-2
        - agent=builder-b role=builder state=exited for=301s idleAfter=60s nudges=4/20 attempt=2 pod=builder-b-2
        - agent=builder-c role=builder state=unresponsive for=610s reportEvery=600s nudges=1/20 attempt=2 pod=builder-c-2
        Decide for each: give it direction to continue, or release it. This message quotes nothing the agents wrote.
        Commands:
          /overseer/bin/overseer peek AGENT --lines 60
          /overseer/bin/overseer send AGENT "continue: <direction>"
          /overseer/bin/overseer loop release AGENT --reason "<why>"
          /overseer/bin/overseer ps
        "#);
    }

    #[test]
    fn the_nudge_names_the_exit_commands() {
        insta::assert_snapshot!(nudge(Stop::Unresponsive, Duration::from_secs(610)), @r#"[overseer] nudge: you have not reported progress for 610s. Run: /overseer/bin/overseer loop progress "<what you are doing now>". When your work is genuinely finished, run: /overseer/bin/overseer loop done --reason "<what you did>". If you cannot go on without help, run: /overseer/bin/overseer loop block --reason "<why>"."#);
        insta::assert_snapshot!(nudge(Stop::Idle, Duration::from_secs(90)), @r#"[overseer] nudge: you have been idle for 90s without declaring your work done or blocked. Continue with your task. When it is genuinely finished, run: /overseer/bin/overseer loop done --reason "<what you did>". If you cannot go on without help, run: /overseer/bin/overseer loop block --reason "<why>"."#);
    }
}
