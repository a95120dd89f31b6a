//! The runtime registry: how each agent CLI is started, prompted, resumed, and how
//! it shows that it waits for a human. Documented in docs/runtimes.md.

use crate::api::{RuntimeMode, RuntimeName, RuntimeSpec};

/// What overseer knows about one agent CLI.
#[derive(Debug, PartialEq, Eq)]
pub struct Runtime {
    pub name: RuntimeName,
    /// Command of the interactive TUI (run inside tmux).
    pub tui: &'static [&'static str],
    /// Command of one headless run; the prompt follows `prompt_flag`.
    pub headless: &'static [&'static str],
    /// Flag before the prompt in a headless run (empty: the prompt is positional).
    pub prompt_flag: &'static str,
    /// Flag that resumes the previous session in a headless run.
    pub resume_flag: &'static [&'static str],
    /// Output patterns that mean the CLI waits for a human or a permission.
    pub waiting_patterns: &'static [&'static str],
    /// The instruction file the CLI reads from its working directory.
    pub instruction_file: &'static str,
    /// Flag before the model's name (`runtime.model`).
    pub model_flag: &'static str,
    /// Flags that let the CLI act without asking a person (`runtime.unattended`,
    /// default true): inside its pod, the pod is the sandbox.
    pub autonomy_flags: &'static [&'static str],
    /// Flags that make the CLI ask a person before it acts (`runtime.unattended: false`),
    /// where its own default does not: Claude Code 2.1's default mode is `auto`, in which
    /// a model judges each tool call and runs most of them without asking.
    pub supervised_flags: &'static [&'static str],
    /// The first-run state the shim writes into the CLI's home before starting it
    /// (src/shim/seed.rs): without it, Claude Code's first screen tries to reach the
    /// vendor's service and stops.
    pub seed: Seed,
    /// Dialogs a first run shows before the prompt (folder trust, theme, accepting the
    /// autonomy mode), and the keys that answer each, typed by the shim.
    pub first_run_dialogs: &'static [Dialog],
    /// What the TUI shows once it takes input, when its first quiet screen is not yet
    /// that (None: the first quiet screen is ready). The shim types the first prompt
    /// only then.
    pub ready_pattern: Option<&'static str>,
    /// How a headless run reports its token usage, when the CLI can: the flags that make
    /// it print JSON events, and their shape (read by the shim into `status.activity.usage`).
    pub usage: Option<UsageOutput>,
}

/// A headless CLI's machine-readable output: `flags` switch it on, `format` is how its
/// lines carry token usage (src/shim/usage.rs reads them).
#[derive(Debug, PartialEq, Eq)]
pub struct UsageOutput {
    pub flags: &'static [&'static str],
    pub format: UsageFormat,
}

/// The JSON event streams of the headless CLIs that report their usage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageFormat {
    /// `claude --print --output-format stream-json --verbose`: one `result` line per run,
    /// with the run's `usage` and `total_cost_usd`.
    ClaudeStreamJson,
    /// `codex exec --json`: a `turn.completed` line per turn, with its `usage`.
    CodexJsonl,
    /// `pi --print --mode json`: a `message_end` line per assistant message, with its
    /// `usage` (tokens and cost).
    PiJson,
}

/// Which CLI's first-run state the shim writes (src/shim/seed.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seed {
    None,
    /// `~/.claude.json`: onboarding done, the working directory trusted, the
    /// `ANTHROPIC_API_KEY` of the pod approved; `~/.claude/settings.json`: the bypass
    /// mode accepted when the command asks for it.
    Claude,
    /// `$CODEX_HOME/config.toml` (default `~/.codex`): the working directory trusted.
    Codex,
    /// `~/.copilot/config.json`: the working directory among `trustedFolders`.
    Copilot,
}

impl Seed {
    /// The files seeded, for docs/runtimes.md.
    pub fn describe(self) -> &'static str {
        match self {
            Seed::None => "-",
            Seed::Claude => {
                "`~/.claude.json` (onboarding, folder trust, API key), `~/.claude/settings.json` (bypass mode accepted)"
            }
            Seed::Codex => "`~/.codex/config.toml` (folder trust)",
            Seed::Copilot => "`~/.copilot/config.json` (folder trust)",
        }
    }
}

/// A dialog the shim answers: when `pattern` shows in the prompt area, it types `keys`
/// (tmux key names, one send-keys each).
#[derive(Debug, PartialEq, Eq)]
pub struct Dialog {
    pub pattern: &'static str,
    pub keys: &'static [&'static str],
}

pub const REGISTRY: &[Runtime] = &[
    Runtime {
        name: RuntimeName::Claude,
        tui: &["claude"],
        headless: &["claude", "--print"],
        prompt_flag: "",
        resume_flag: &["--continue"],
        waiting_patterns: &[
            "Do you want to proceed?",
            "Do you want to make this edit",
            "❯ 1. Yes",
        ],
        instruction_file: "CLAUDE.md",
        model_flag: "--model",
        autonomy_flags: &["--dangerously-skip-permissions"],
        supervised_flags: &["--permission-mode", "default"],
        seed: Seed::Claude,
        // Claude Code 2.1.332's screens (tests/screens/claude-2.1.332): each one's
        // default answer is the refusal, which exits or drops the key.
        first_run_dialogs: &[
            Dialog {
                pattern: "Is this a project you created or one you trust?",
                keys: &["Down", "Enter"],
            },
            Dialog {
                pattern: "Do you want to use this API key?",
                keys: &["Up", "Enter"],
            },
            Dialog {
                pattern: "Claude Code running in Bypass Permissions mode",
                keys: &["Down", "Enter"],
            },
        ],
        ready_pattern: None,
        usage: Some(UsageOutput {
            flags: &["--output-format", "stream-json", "--verbose"],
            format: UsageFormat::ClaudeStreamJson,
        }),
    },
    Runtime {
        name: RuntimeName::Codex,
        tui: &["codex"],
        // A workspace need not be a git repository: `codex exec` refuses to run
        // outside one without this flag.
        headless: &["codex", "exec", "--skip-git-repo-check"],
        prompt_flag: "",
        resume_flag: &["resume", "--last"],
        // codex 0.171.0's approval questions, as its binary holds them.
        waiting_patterns: &[
            "Would you like to run the following command?",
            "Would you like to make the following edits?",
            "Would you like to grant these permissions?",
        ],
        instruction_file: "AGENTS.md",
        model_flag: "--model",
        autonomy_flags: &["--dangerously-bypass-approvals-and-sandbox"],
        // codex 0.171.0 keeps only `on-request` and `never`: the model asks for a person
        // where a command needs to leave the sandbox. A config file can set `never`;
        // this wins over it (`-c`, which `codex exec` takes as well as the TUI).
        supervised_flags: &["-c", "approval_policy=\"on-request\""],
        seed: Seed::Codex,
        // codex 0.171.0 (tests/screens/codex-0.171.0): the default answer trusts.
        first_run_dialogs: &[Dialog {
            pattern: "Trust this folder?",
            keys: &["Enter"],
        }],
        ready_pattern: None,
        usage: Some(UsageOutput {
            flags: &["--json"],
            format: UsageFormat::CodexJsonl,
        }),
    },
    Runtime {
        name: RuntimeName::Pi,
        tui: &["pi"],
        headless: &["pi", "--print"],
        prompt_flag: "",
        resume_flag: &["--continue"],
        // pi 0.73.1 (tests/screens/pi-0.73.1) asks no permission: its tools run unasked,
        // so it has nothing to wait on and no supervised mode.
        waiting_patterns: &[],
        instruction_file: "AGENTS.md",
        model_flag: "--model",
        autonomy_flags: &[],
        supervised_flags: &[],
        seed: Seed::None,
        first_run_dialogs: &[],
        ready_pattern: None,
        usage: Some(UsageOutput {
            flags: &["--mode", "json"],
            format: UsageFormat::PiJson,
        }),
    },
    Runtime {
        name: RuntimeName::Copilot,
        tui: &["copilot"],
        headless: &["copilot"],
        prompt_flag: "-p",
        resume_flag: &["--continue"],
        // Copilot 1.0.102 (tests/screens/copilot-1.0.102): without --allow-all-tools a
        // tool call asks the first, default "Yes"; a path outside the working directory
        // (the overseer binary, say) asks the second unless --allow-all-paths. Its folder
        // trust defaults to "Yes" too.
        waiting_patterns: &[
            "Do you want to run this command?",
            "Do you want to allow this?",
        ],
        instruction_file: "AGENTS.md",
        model_flag: "--model",
        // Tools, paths and URLs: the pod is the sandbox.
        autonomy_flags: &["--allow-all"],
        supervised_flags: &[],
        seed: Seed::Copilot,
        first_run_dialogs: &[Dialog {
            pattern: "Do you trust the files in this folder?",
            keys: &["Enter"],
        }],
        // It loads its plugins (the guard's among them) after its first quiet screen
        // and drops what is typed meanwhile; its status bar shows once it takes input.
        ready_pattern: Some("Interactive · "),
        usage: None,
    },
    Runtime {
        name: RuntimeName::Cursor,
        tui: &["cursor-agent"],
        headless: &["cursor-agent", "--print"],
        prompt_flag: "",
        resume_flag: &["--resume"],
        waiting_patterns: &["Run this command?", "(y/n)"],
        instruction_file: "AGENTS.md",
        model_flag: "--model",
        autonomy_flags: &["--force"],
        supervised_flags: &[],
        seed: Seed::None,
        first_run_dialogs: &[Dialog {
            pattern: "Trust this workspace",
            keys: &["Enter"],
        }],
        ready_pattern: None,
        usage: None,
    },
    Runtime {
        name: RuntimeName::Custom,
        tui: &[],
        headless: &[],
        prompt_flag: "",
        resume_flag: &[],
        waiting_patterns: &[],
        instruction_file: "AGENTS.md",
        model_flag: "",
        autonomy_flags: &[],
        supervised_flags: &[],
        seed: Seed::None,
        first_run_dialogs: &[],
        ready_pattern: None,
        usage: None,
    },
];

pub fn lookup(name: RuntimeName) -> &'static Runtime {
    REGISTRY
        .iter()
        .find(|r| r.name == name)
        .expect("every runtime name is in the registry")
}

/// The command that starts the agent CLI: a user `command` replaces the registry's
/// (and is required for custom); then the model flag with `model`, the autonomy flags
/// (with `unattended: false` the supervised flags instead), and `args`.
pub fn base_command(spec: &RuntimeSpec, mode: RuntimeMode) -> Vec<String> {
    let runtime = lookup(spec.effective_name());
    let registry = match mode {
        RuntimeMode::Tui => runtime.tui,
        RuntimeMode::Headless => runtime.headless,
    };
    let mut command: Vec<String> = match &spec.command {
        Some(command) => command.clone(),
        None => registry.iter().map(|s| s.to_string()).collect(),
    };
    if let Some(model) = spec
        .model
        .as_ref()
        .filter(|_| !runtime.model_flag.is_empty())
    {
        command.extend([runtime.model_flag.to_string(), model.clone()]);
    }
    let permissions = match spec.unattended {
        Some(false) => runtime.supervised_flags,
        _ => runtime.autonomy_flags,
    };
    command.extend(permissions.iter().map(|f| f.to_string()));
    command.extend(spec.args.iter().flatten().cloned());
    command
}

/// The command of an Agent's CLI under the shim: `base_command`, and for a headless run
/// the runtime's JSON output flags, so the shim reads each run's token usage. Step pods
/// keep the plain output, the step's result.
pub fn agent_command(spec: &RuntimeSpec, mode: RuntimeMode) -> Vec<String> {
    let runtime = lookup(spec.effective_name());
    let mut command = base_command(spec, mode);
    if let (RuntimeMode::Headless, Some(usage)) = (mode, &runtime.usage) {
        command.extend(usage.flags.iter().map(|f| f.to_string()));
    }
    command
}

/// `base` resuming the previous session (the runtime's resume flag).
pub fn with_resume(runtime: &Runtime, base: &[String]) -> Vec<String> {
    let mut command = base.to_vec();
    command.extend(runtime.resume_flag.iter().map(|s| s.to_string()));
    command
}

/// One headless run of `base` with `prompt` (after the prompt flag), optionally resuming.
pub fn with_prompt(runtime: &Runtime, base: &[String], resume: bool, prompt: &str) -> Vec<String> {
    let mut command = if resume {
        with_resume(runtime, base)
    } else {
        base.to_vec()
    };
    if !runtime.prompt_flag.is_empty() {
        command.push(runtime.prompt_flag.into());
    }
    command.push(as_argument(prompt));
    command
}

/// A prompt as one argument that no CLI can read as a flag: one that starts with `-`
/// (`--dangerously-skip-permissions`, say) gets a space in front. Not every agent CLI
/// takes `--` to end its options, while every one keeps a leading space.
fn as_argument(prompt: &str) -> String {
    if prompt.starts_with('-') {
        format!(" {prompt}")
    } else {
        prompt.to_string()
    }
}

/// The command line of one headless run with `prompt`.
pub fn headless_command(spec: &RuntimeSpec, prompt: &str) -> Vec<String> {
    let runtime = lookup(spec.effective_name());
    with_prompt(
        runtime,
        &base_command(spec, RuntimeMode::Headless),
        false,
        prompt,
    )
}

/// The registry as the Markdown table of docs/runtimes.md (kept true by a test).
pub fn markdown_table() -> String {
    let code = |parts: &[&str]| {
        if parts.is_empty() {
            "-".to_string()
        } else {
            format!("`{}`", parts.join(" "))
        }
    };
    let mut out = String::from(
        "| runtime | TUI command | headless command | prompt flag | resume flag | waiting-for-human patterns | instruction file | model flag | autonomy flags (`unattended`) | supervised flags (`unattended: false`) | first-run state seeded | first-run dialogs answered (keys) | agent headless usage flags |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in REGISTRY {
        let name = crate::api::wire_name(r.name);
        let flag = if r.prompt_flag.is_empty() {
            "(positional)".to_string()
        } else {
            format!("`{}`", r.prompt_flag)
        };
        let patterns: Vec<String> = r
            .waiting_patterns
            .iter()
            .map(|p| format!("`{p}`"))
            .collect();
        let dialogs: Vec<String> = r
            .first_run_dialogs
            .iter()
            .map(|d| format!("`{}` ({})", d.pattern, d.keys.join(" ")))
            .collect();
        let list = |items: Vec<String>| {
            if items.is_empty() {
                "-".to_string()
            } else {
                items.join(", ")
            }
        };
        let model_flag = if r.model_flag.is_empty() {
            "-".to_string()
        } else {
            format!("`{}`", r.model_flag)
        };
        out.push_str(&format!(
            "| {name} | {} | {} | {flag} | {} | {} | {} | {model_flag} | {} | {} | {} | {} | {} |\n",
            code(r.tui),
            code(r.headless),
            code(r.resume_flag),
            list(patterns),
            r.instruction_file,
            code(r.autonomy_flags),
            code(r.supervised_flags),
            r.seed.describe(),
            list(dialogs),
            code(r.usage.as_ref().map_or(&[], |u| u.flags)),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_runtime_but_custom_has_commands() {
        for runtime in REGISTRY {
            let custom = runtime.name == RuntimeName::Custom;
            assert_eq!(runtime.tui.is_empty(), custom, "{:?}", runtime.name);
            assert_eq!(runtime.headless.is_empty(), custom, "{:?}", runtime.name);
        }
    }

    #[test]
    fn copilot_is_ready_once_its_status_bar_shows() {
        // Recorded from copilot 1.0.102: its ready screen, and the screen it shows while
        // it still loads a plugin (what is typed then is dropped).
        let pattern = lookup(RuntimeName::Copilot).ready_pattern.unwrap();
        let screen = |name: &str| {
            std::fs::read_to_string(format!("tests/screens/copilot-1.0.102/{name}")).unwrap()
        };
        assert!(screen("ready.txt").contains(pattern));
        for loading in ["loading-plugins.txt", "trust-dialog.txt"] {
            assert!(!screen(loading).contains(pattern), "{loading}");
        }
    }

    #[test]
    fn headless_commands() {
        let spec = |name, command: Option<&[&str]>, args: Option<&[&str]>| RuntimeSpec {
            name: Some(name),
            command: command.map(|c| c.iter().map(|s| s.to_string()).collect()),
            args: args.map(|c| c.iter().map(|s| s.to_string()).collect()),
            ..Default::default()
        };
        let rows = [
            (
                spec(RuntimeName::Claude, None, None),
                vec![
                    "claude",
                    "--print",
                    "--dangerously-skip-permissions",
                    "fix it",
                ],
            ),
            (
                spec(RuntimeName::Codex, None, Some(&["--json"])),
                vec![
                    "codex",
                    "exec",
                    "--skip-git-repo-check",
                    "--dangerously-bypass-approvals-and-sandbox",
                    "--json",
                    "fix it",
                ],
            ),
            (
                spec(RuntimeName::Copilot, None, None),
                vec!["copilot", "--allow-all", "-p", "fix it"],
            ),
            (
                spec(RuntimeName::Custom, Some(&["my-agent", "run"]), None),
                vec!["my-agent", "run", "fix it"],
            ),
        ];
        for (spec, expected) in rows {
            assert_eq!(
                headless_command(&spec, "fix it"),
                expected,
                "{:?}",
                spec.name
            );
        }
    }

    #[test]
    fn the_model_and_the_autonomy_flags_come_before_the_users_args() {
        let spec = |name, model: Option<&str>, unattended: Option<bool>| RuntimeSpec {
            name: Some(name),
            model: model.map(String::from),
            unattended,
            args: Some(vec!["--verbose".into()]),
            ..Default::default()
        };
        // (runtime spec, mode, the command)
        let rows = [
            (
                spec(RuntimeName::Claude, Some("claude-opus-4"), None),
                RuntimeMode::Tui,
                vec![
                    "claude",
                    "--model",
                    "claude-opus-4",
                    "--dangerously-skip-permissions",
                    "--verbose",
                ],
            ),
            (
                spec(RuntimeName::Claude, None, Some(false)),
                RuntimeMode::Headless,
                vec![
                    "claude",
                    "--print",
                    "--permission-mode",
                    "default",
                    "--verbose",
                ],
            ),
            (
                spec(RuntimeName::Codex, Some("gpt-5-codex"), Some(true)),
                RuntimeMode::Headless,
                vec![
                    "codex",
                    "exec",
                    "--skip-git-repo-check",
                    "--model",
                    "gpt-5-codex",
                    "--dangerously-bypass-approvals-and-sandbox",
                    "--verbose",
                ],
            ),
            (
                spec(RuntimeName::Pi, None, None),
                RuntimeMode::Tui,
                vec!["pi", "--verbose"],
            ),
            (
                RuntimeSpec {
                    command: Some(vec!["my-agent".into()]),
                    ..spec(RuntimeName::Custom, Some("m"), None)
                },
                RuntimeMode::Tui,
                vec!["my-agent", "--verbose"],
            ),
        ];
        for (spec, mode, expected) in rows {
            assert_eq!(base_command(&spec, mode), expected, "{:?}", spec.name);
        }
    }

    #[test]
    fn a_headless_agent_prints_the_json_its_usage_is_read_from() {
        let spec = |name| RuntimeSpec {
            name: Some(name),
            unattended: Some(false),
            ..Default::default()
        };
        let supervised_codex = [
            "codex",
            "exec",
            "--skip-git-repo-check",
            "-c",
            "approval_policy=\"on-request\"",
        ];
        // (runtime, mode, the agent's command): steps keep base_command's plain output.
        let rows = [
            (
                RuntimeName::Claude,
                RuntimeMode::Headless,
                vec![
                    "claude",
                    "--print",
                    "--permission-mode",
                    "default",
                    "--output-format",
                    "stream-json",
                    "--verbose",
                ],
            ),
            (
                RuntimeName::Claude,
                RuntimeMode::Tui,
                vec!["claude", "--permission-mode", "default"],
            ),
            (
                RuntimeName::Codex,
                RuntimeMode::Headless,
                [&supervised_codex[..], &["--json"]].concat(),
            ),
            (
                RuntimeName::Pi,
                RuntimeMode::Headless,
                vec!["pi", "--print", "--mode", "json"],
            ),
            (RuntimeName::Copilot, RuntimeMode::Headless, vec!["copilot"]),
        ];
        for (name, mode, expected) in rows {
            assert_eq!(
                agent_command(&spec(name), mode),
                expected,
                "{name:?} {mode:?}"
            );
        }
        assert_eq!(
            headless_command(&spec(RuntimeName::Codex), "fix it"),
            [&supervised_codex[..], &["fix it"]].concat()
        );
    }

    #[test]
    fn a_prompt_is_never_read_as_a_flag() {
        let claude = RuntimeSpec {
            name: Some(RuntimeName::Claude),
            ..Default::default()
        };
        let copilot = RuntimeSpec {
            name: Some(RuntimeName::Copilot),
            ..Default::default()
        };
        let supervised = |spec: &RuntimeSpec| RuntimeSpec {
            unattended: Some(false),
            ..spec.clone()
        };
        assert_eq!(
            headless_command(&supervised(&claude), "--dangerously-skip-permissions"),
            vec![
                "claude",
                "--print",
                "--permission-mode",
                "default",
                " --dangerously-skip-permissions"
            ]
        );
        assert_eq!(
            headless_command(&supervised(&copilot), "-rf everything"),
            vec!["copilot", "-p", " -rf everything"]
        );
        assert_eq!(
            headless_command(&supervised(&claude), "fix the - bug"),
            vec![
                "claude",
                "--print",
                "--permission-mode",
                "default",
                "fix the - bug"
            ]
        );
    }
}
