//! Token usage read from a headless CLI's JSON output: a pure meter fed one line of
//! stdout at a time. Only numbers are kept; no text of the run leaves this module.

use serde_json::Value;

use crate::agent::TokenUsage;
use crate::runtimes::UsageFormat;

/// Bytes kept of a line still being written; a longer line is not a usage line (those are
/// a few hundred bytes) and is skipped to its end.
const MAX_LINE_BYTES: usize = 64 * 1024;

/// The most of any token figure the Agent's schema takes (10^15).
pub const MAX_TOKENS: i64 = 1_000_000_000_000_000;

/// The most cost reported, in US dollars: `costUSD` then fits its 32 characters.
const MAX_COST_USD: f64 = 1e12;

/// Sums the usage of every run of one attempt.
#[derive(Debug)]
pub struct Meter {
    format: UsageFormat,
    usage: TokenUsage,
    cost: Option<f64>,
    /// The unfinished last line of stdout.
    partial: Vec<u8>,
    /// The current line went past `MAX_LINE_BYTES`: skip to its end.
    skipping: bool,
    /// The current run has reported usage.
    reported_this_run: bool,
}

/// What one output line reports.
#[derive(Debug, Default, PartialEq)]
struct LineUsage {
    input: i64,
    cached: i64,
    output: i64,
    cost: Option<f64>,
    /// This line closes a run (claude's `result`); for the others each line counts as
    /// part of the current run, and a run is counted when it ends.
    ends_run: bool,
}

impl Meter {
    pub fn new(format: UsageFormat) -> Meter {
        Meter {
            format,
            usage: TokenUsage::default(),
            cost: None,
            partial: Vec::new(),
            skipping: false,
            reported_this_run: false,
        }
    }

    /// Feeds a chunk of stdout; returns whether the usage changed.
    pub fn feed(&mut self, chunk: &[u8]) -> bool {
        let mut changed = false;
        for piece in chunk.split_inclusive(|b| *b == b'\n') {
            let complete = piece.ends_with(b"\n");
            if !self.skipping {
                self.partial.extend_from_slice(piece);
                if self.partial.len() > MAX_LINE_BYTES {
                    self.partial.clear();
                    self.skipping = true;
                }
            }
            if complete {
                if !self.skipping {
                    let line = std::mem::take(&mut self.partial);
                    changed |= self.line(&String::from_utf8_lossy(&line));
                }
                self.partial.clear();
                self.skipping = false;
            }
        }
        changed
    }

    /// A run ended: formats that report per turn or message count it here, when it
    /// reported any usage. Returns whether the usage changed.
    pub fn run_ended(&mut self) -> bool {
        let counts = std::mem::take(&mut self.reported_this_run)
            && self.format != UsageFormat::ClaudeStreamJson;
        if counts {
            self.usage.runs = self.usage.runs.saturating_add(1);
        }
        counts
    }

    /// The usage as reported, every figure within what the schema takes: the CLI's
    /// output is the model's and the agent's to shape, and one figure the API server
    /// refused would stop every report of the agent's activity.
    pub fn usage(&self) -> Option<TokenUsage> {
        let bounded = |n: i64| n.clamp(0, MAX_TOKENS);
        let u = &self.usage;
        (u.runs > 0 || u.total_tokens > 0).then(|| TokenUsage {
            runs: bounded(u.runs),
            input_tokens: bounded(u.input_tokens),
            cached_input_tokens: bounded(u.cached_input_tokens),
            output_tokens: bounded(u.output_tokens),
            total_tokens: bounded(u.total_tokens),
            cost_usd: self
                .cost
                .map(|c| format!("{:.4}", c.clamp(0.0, MAX_COST_USD))),
        })
    }

    fn line(&mut self, line: &str) -> bool {
        let Some(found) = parse_line(self.format, line) else {
            return false;
        };
        let u = &mut self.usage;
        u.input_tokens = u.input_tokens.saturating_add(found.input);
        u.cached_input_tokens = u.cached_input_tokens.saturating_add(found.cached);
        u.output_tokens = u.output_tokens.saturating_add(found.output);
        u.total_tokens = u.input_tokens.saturating_add(u.output_tokens);
        if found.ends_run {
            u.runs = u.runs.saturating_add(1);
        }
        self.reported_this_run = true;
        if let Some(cost) = found.cost {
            self.cost = Some(self.cost.unwrap_or(0.0) + cost);
        }
        true
    }
}

/// The usage one line of `format` reports, if it is such a line.
fn parse_line(format: UsageFormat, line: &str) -> Option<LineUsage> {
    let line = line.trim();
    if !line.starts_with('{') {
        return None;
    }
    let event: Value = serde_json::from_str(line).ok()?;
    let kind = event.get("type")?.as_str()?;
    let count = |usage: &Value, key: &str| {
        usage
            .get(key)
            .and_then(Value::as_i64)
            .filter(|n| *n >= 0)
            .unwrap_or(0)
    };
    let cost = |value: Option<&Value>| value.and_then(Value::as_f64).filter(|c| *c >= 0.0);
    match format {
        UsageFormat::ClaudeStreamJson if kind == "result" => {
            let usage = event.get("usage")?;
            let cache_read = count(usage, "cache_read_input_tokens");
            Some(LineUsage {
                input: count(usage, "input_tokens")
                    .saturating_add(count(usage, "cache_creation_input_tokens"))
                    .saturating_add(cache_read),
                cached: cache_read,
                output: count(usage, "output_tokens"),
                cost: cost(event.get("total_cost_usd")),
                ends_run: true,
            })
        }
        UsageFormat::CodexJsonl if kind == "turn.completed" => {
            let usage = event.get("usage")?;
            Some(LineUsage {
                input: count(usage, "input_tokens"),
                cached: count(usage, "cached_input_tokens"),
                output: count(usage, "output_tokens")
                    .saturating_add(count(usage, "reasoning_output_tokens")),
                cost: None,
                ends_run: false,
            })
        }
        UsageFormat::PiJson if kind == "message_end" => {
            let message = event.get("message")?;
            if message.get("role").and_then(Value::as_str) != Some("assistant") {
                return None;
            }
            let usage = message.get("usage")?;
            let cache_read = count(usage, "cacheRead");
            Some(LineUsage {
                input: count(usage, "input")
                    .saturating_add(count(usage, "cacheWrite"))
                    .saturating_add(cache_read),
                cached: cache_read,
                output: count(usage, "output"),
                cost: cost(usage.get("cost").and_then(|c| c.get("total"))),
                ends_run: false,
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Lines in the shapes the CLIs print (claude's stream-json result, codex exec
    // --json's turn.completed, pi --mode json's message_end), trimmed of fields not read.
    const CLAUDE_INIT: &str = r#"{"type":"system","subtype":"init","session_id":"5c1d","model":"claude-sonnet-4-5","tools":["Bash","Edit"]}"#;
    const CLAUDE_ASSISTANT: &str = r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Done."}],"usage":{"input_tokens":3,"output_tokens":12}},"session_id":"5c1d"}"#;
    const CLAUDE_RESULT: &str = r#"{"type":"result","subtype":"success","is_error":false,"duration_ms":5321,"num_turns":3,"result":"Done.","session_id":"5c1d","total_cost_usd":0.0421,"usage":{"input_tokens":10,"cache_creation_input_tokens":2000,"cache_read_input_tokens":15000,"output_tokens":640}}"#;
    const CODEX_STARTED: &str =
        r#"{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}"#;
    const CODEX_ITEM: &str = r#"{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"usage: input_tokens 99"}}"#;
    const CODEX_TURN: &str = r#"{"type":"turn.completed","usage":{"input_tokens":24763,"cached_input_tokens":24448,"output_tokens":122}}"#;
    const PI_USER_END: &str = r#"{"type":"message_end","message":{"role":"user","content":[{"type":"text","text":"go"}]}}"#;
    const PI_ASSISTANT_END: &str = r#"{"type":"message_end","message":{"role":"assistant","content":[],"usage":{"input":120,"output":80,"cacheRead":3000,"cacheWrite":400,"totalTokens":3600,"cost":{"input":0.0004,"output":0.0012,"cacheRead":0.0009,"cacheWrite":0.0015,"total":0.004}}}}"#;

    #[test]
    fn lines_and_what_they_report() {
        let rows: &[(UsageFormat, &str, Option<LineUsage>)] = &[
            (UsageFormat::ClaudeStreamJson, CLAUDE_INIT, None),
            // Per-message usage is part of the run's total in its result line.
            (UsageFormat::ClaudeStreamJson, CLAUDE_ASSISTANT, None),
            (
                UsageFormat::ClaudeStreamJson,
                CLAUDE_RESULT,
                Some(LineUsage {
                    input: 17_010,
                    cached: 15_000,
                    output: 640,
                    cost: Some(0.0421),
                    ends_run: true,
                }),
            ),
            (
                UsageFormat::ClaudeStreamJson,
                "Done. usage: 12 tokens",
                None,
            ),
            (UsageFormat::ClaudeStreamJson, "{not json", None),
            (UsageFormat::CodexJsonl, CODEX_STARTED, None),
            (UsageFormat::CodexJsonl, CODEX_ITEM, None),
            (
                UsageFormat::CodexJsonl,
                CODEX_TURN,
                Some(LineUsage {
                    input: 24_763,
                    cached: 24_448,
                    output: 122,
                    cost: None,
                    ends_run: false,
                }),
            ),
            // Another runtime's result line is not this runtime's usage.
            (UsageFormat::CodexJsonl, CLAUDE_RESULT, None),
            (UsageFormat::PiJson, PI_USER_END, None),
            (
                UsageFormat::PiJson,
                PI_ASSISTANT_END,
                Some(LineUsage {
                    input: 3_520,
                    cached: 3_000,
                    output: 80,
                    cost: Some(0.004),
                    ends_run: false,
                }),
            ),
            // Forged negatives count as nothing.
            (
                UsageFormat::CodexJsonl,
                r#"{"type":"turn.completed","usage":{"input_tokens":-5,"output_tokens":7}}"#,
                Some(LineUsage {
                    input: 0,
                    cached: 0,
                    output: 7,
                    cost: None,
                    ends_run: false,
                }),
            ),
        ];
        for (format, line, expected) in rows {
            assert_eq!(&parse_line(*format, line), expected, "{format:?}: {line}");
        }
    }

    #[test]
    fn forged_figures_stay_within_what_the_schema_takes() {
        let mut meter = Meter::new(UsageFormat::ClaudeStreamJson);
        let forged = format!(
            r#"{{"type":"result","total_cost_usd":1e308,"usage":{{"input_tokens":{max},"output_tokens":{max}}}}}"#,
            max = i64::MAX
        );
        for _ in 0..3 {
            assert!(meter.feed(format!("{forged}\n").as_bytes()));
        }
        let usage = meter.usage().unwrap();
        assert_eq!(
            (usage.input_tokens, usage.output_tokens, usage.total_tokens),
            (MAX_TOKENS, MAX_TOKENS, MAX_TOKENS)
        );
        let cost = usage.cost_usd.unwrap();
        assert!(cost.len() <= 32, "{cost}");
        // The figures as the API server's schema of the Agent checks them.
        let schema = serde_json::to_value(schemars::schema_for!(TokenUsage)).unwrap();
        for field in ["runs", "inputTokens", "outputTokens", "totalTokens"] {
            assert_eq!(
                schema["properties"][field]["maximum"], MAX_TOKENS,
                "{field}"
            );
        }
    }

    #[test]
    fn claude_runs_sum_and_count_at_their_result_line() {
        let mut meter = Meter::new(UsageFormat::ClaudeStreamJson);
        assert_eq!(meter.usage(), None, "nothing reported yet");
        let run = format!("{CLAUDE_INIT}\n{CLAUDE_ASSISTANT}\n{CLAUDE_RESULT}\n");
        // Chunks end anywhere: here inside the result line.
        let (a, b) = run.as_bytes().split_at(run.len() - 40);
        assert!(!meter.feed(a));
        assert!(meter.feed(b));
        assert!(!meter.run_ended(), "claude counts its runs by result line");
        assert!(meter.feed(run.as_bytes()));
        assert_eq!(
            meter.usage(),
            Some(TokenUsage {
                runs: 2,
                input_tokens: 34_020,
                cached_input_tokens: 30_000,
                output_tokens: 1_280,
                total_tokens: 35_300,
                cost_usd: Some("0.0842".into()),
            })
        );
    }

    #[test]
    fn codex_turns_sum_and_a_run_counts_when_it_ends() {
        let mut meter = Meter::new(UsageFormat::CodexJsonl);
        assert!(meter.feed(format!("{CODEX_STARTED}\n{CODEX_ITEM}\n{CODEX_TURN}\n").as_bytes()));
        assert!(meter.feed(format!("{CODEX_TURN}\n").as_bytes()));
        assert!(meter.run_ended());
        assert!(!meter.run_ended(), "a run that reported nothing");
        let usage = meter.usage().unwrap();
        assert_eq!((usage.runs, usage.input_tokens), (1, 49_526));
        assert_eq!(usage.cached_input_tokens, 48_896);
        assert_eq!(usage.total_tokens, 49_526 + 244);
        assert_eq!(usage.cost_usd, None, "codex reports no cost");
    }

    #[test]
    fn an_overlong_line_is_skipped_to_its_end() {
        let mut meter = Meter::new(UsageFormat::ClaudeStreamJson);
        let long = format!(
            "{{\"type\":\"assistant\",\"x\":\"{}\"}}",
            "a".repeat(MAX_LINE_BYTES)
        );
        assert!(!meter.feed(long.as_bytes()));
        assert!(!meter.feed(b"more of it\n"));
        assert!(meter.feed(format!("{CLAUDE_RESULT}\n").as_bytes()));
        assert_eq!(meter.usage().unwrap().runs, 1);
    }
}

/// The real CLIs' JSON output (tests/screens/), from a run against the model stand-in
/// that answered two requests of 120 input and 30 output tokens each.
#[cfg(test)]
mod real_output_tests {
    use super::*;

    #[test]
    fn the_real_clis_usage_is_what_the_model_sent() {
        let rows = [
            (
                UsageFormat::ClaudeStreamJson,
                "claude-2.1.332/print-stream-json.jsonl",
            ),
            (UsageFormat::CodexJsonl, "codex-0.171.0/exec-json.jsonl"),
            (UsageFormat::PiJson, "pi-0.73.1/print-json.jsonl"),
        ];
        for (format, path) in rows {
            let mut meter = Meter::new(format);
            meter.feed(&crate::shim::tests::real_cli_fixture(path));
            meter.run_ended();
            let usage = meter.usage().unwrap_or_else(|| panic!("{path}: no usage"));
            assert_eq!(
                (
                    usage.runs,
                    usage.input_tokens,
                    usage.output_tokens,
                    usage.total_tokens
                ),
                (1, 240, 60, 300),
                "{path}"
            );
        }
    }
}
