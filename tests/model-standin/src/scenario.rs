//! A scenario: what the stand-in model answers, turn by turn. Pure: which turn answers
//! a request is decided here from the request's last message, whatever API it came in.

use serde::{Deserialize, Serialize};

/// Turns in the order they are tried: the first unused one whose `when` fits the last
/// message answers it. A request that no turn fits gets [`UNSCRIPTED`].
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct Scenario {
    pub turns: Vec<Turn>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    pub when: When,
    pub reply: Reply,
    /// How many requests this turn answers (default 1).
    #[serde(default = "one")]
    pub times: u32,
    /// The token usage reported with the reply.
    #[serde(default)]
    pub usage: Usage,
}

fn one() -> u32 {
    1
}

/// What the conversation's last message must hold.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum When {
    /// A user's (or the operator's typed) text containing this.
    Prompt(String),
    /// The output of a tool call containing this.
    ToolResult(String),
}

/// The model's answer: text ends the turn; a shell command is a tool call the CLI runs
/// with its own shell tool (Claude's `Bash`, codex's shell), after which the CLI sends
/// the command's output back as the next request.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Reply {
    Text(String),
    Shell(String),
    /// A shell command the model asks a person to approve before it runs: to codex, an
    /// `exec_command` with `sandbox_permissions: require_escalated` and a justification
    /// (codex 0.171 has no approval policy that asks on its own); to any other CLI, the
    /// plain shell call, whose approval is the CLI's permission mode.
    ShellAskingApproval(String),
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl Default for Usage {
    fn default() -> Self {
        Usage {
            input_tokens: 120,
            output_tokens: 30,
        }
    }
}

/// The reply to a request no turn fits, and to the CLIs' side requests (titles, topic
/// checks): plain text, so the CLI's turn ends.
pub const UNSCRIPTED: &str = "(stand-in model) nothing is scripted for this turn.";

/// A request's last message, as the scenario sees it in either API.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Last {
    UserText(String),
    ToolResult(String),
    Other,
}

impl When {
    pub fn fits(&self, last: &Last) -> bool {
        match (self, last) {
            (When::Prompt(wanted), Last::UserText(text)) => text.contains(wanted.as_str()),
            (When::ToolResult(wanted), Last::ToolResult(text)) => text.contains(wanted.as_str()),
            _ => false,
        }
    }
}

/// Which turns have answered how often; picks the turn for each request.
#[derive(Debug)]
pub struct Script {
    scenario: Scenario,
    used: Vec<u32>,
}

impl Script {
    pub fn new(scenario: Scenario) -> Script {
        let used = vec![0; scenario.turns.len()];
        Script { scenario, used }
    }

    /// The index of the turn that answers `last`, now counted as used.
    pub fn answer(&mut self, last: &Last) -> Option<usize> {
        let index = self
            .scenario
            .turns
            .iter()
            .zip(&self.used)
            .position(|(turn, used)| *used < turn.times && turn.when.fits(last))?;
        self.used[index] += 1;
        Some(index)
    }

    pub fn turn(&self, index: usize) -> &Turn {
        &self.scenario.turns[index]
    }

    /// Turns not yet used as often as scripted.
    pub fn unused(&self) -> Vec<usize> {
        (0..self.used.len())
            .filter(|&i| self.used[i] < self.scenario.turns[i].times)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(json: &str) -> Scenario {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn the_first_unused_fitting_turn_answers() {
        let mut script = Script::new(scenario(
            r#"{"turns": [
                {"when": {"prompt": "build"}, "reply": {"text": "started"}},
                {"when": {"prompt": "nudge"}, "reply": {"shell": "overseer loop done"}},
                {"when": {"tool_result": ""}, "reply": {"text": "done"}, "times": 2}
            ]}"#,
        ));
        let user = |t: &str| Last::UserText(t.into());
        let tool = |t: &str| Last::ToolResult(t.into());
        // (last message, the turn that answers it)
        let rows = [
            (user("please build it"), Some(0)),
            (user("please build it again"), None),
            (tool("ok"), Some(2)),
            (user("[overseer] nudge: keep going"), Some(1)),
            (tool("exit 0"), Some(2)),
            (tool("exit 0"), None),
            (Last::Other, None),
        ];
        for (last, expected) in rows {
            assert_eq!(script.answer(&last), expected, "{last:?}");
        }
        assert!(script.unused().is_empty());
    }

    #[test]
    fn a_scenario_refuses_unknown_fields() {
        let error = serde_json::from_str::<Scenario>(
            r#"{"turns": [{"when": {"prompt": "x"}, "reply": {"text": "y"}, "repeat": 2}]}"#,
        )
        .unwrap_err();
        assert!(
            error.to_string().contains("unknown field `repeat`"),
            "{error}"
        );
    }
}
