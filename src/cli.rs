//! The command line of the one `overseer` binary: operator, in-pod supervisor and CLI.

use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use clap_complete::ArgValueCandidates;

use crate::telemetry::LogFormat;

#[derive(Parser, Debug)]
#[command(
    name = "overseer",
    version,
    about = "Keeps autonomous coding agents working until they are genuinely done"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// The kubeconfig file to use, as kubectl's flag (default: KUBECONFIG, then
    /// ~/.kube/config; in a pod, its ServiceAccount).
    #[arg(long, global = true, value_name = "FILE")]
    pub kubeconfig: Option<std::path::PathBuf>,
    /// The kubeconfig context to use, as kubectl's flag.
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the controller.
    Run(crate::operator::RunArgs),
    /// Goals: `overseer goal resume NAME`.
    Goal {
        #[command(subcommand)]
        command: GoalCommand,
    },
    /// In a step pod: run the agent's command and record the step's result.
    Step {
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// In a step pod: set the step's result (read from stdin, at most 4 KiB).
    Result,
    /// In an init container: copy this binary to DEST.
    Install { dest: std::path::PathBuf },
    /// In an init container: clone the workspace's git source (kept when a clone is
    /// there already); and git's credential helper for it.
    Workspace {
        #[command(subcommand)]
        command: WorkspaceCommand,
    },
    /// In an agent pod: run the agent CLI under supervision (`overseer shim -- CMD...`).
    Shim(crate::shim::ShimArgs),
    /// Inside the shim's tmux pane: run the agent CLI and record its exit code in
    /// EXIT_FILE (tmux itself sometimes loses the status of a dead pane).
    #[command(hide = true)]
    PaneRun {
        #[arg(long)]
        exit_file: std::path::PathBuf,
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// In an agent pod: deliver the message on stdin to the agent; exits 0 only once delivered.
    Input {
        /// Read exactly this many bytes (exec streams may never close stdin); default: until end of input.
        #[arg(long)]
        bytes: Option<usize>,
        /// What this delivers (repeatable): when the shim has delivered every id given
        /// already, it confirms without typing the message again.
        #[arg(long = "id")]
        ids: Vec<String>,
        /// Type nothing: exit 0 only when the shim has delivered every id given.
        #[arg(long, requires = "ids")]
        confirm: bool,
        #[arg(long, env = "OVERSEER_INPUT_SOCKET", default_value = crate::shim::protocol::DEFAULT_SOCKET)]
        socket: std::path::PathBuf,
    },
    /// In an agent pod: report progress or end this agent's loop (`overseer loop progress|done|block`).
    Loop {
        #[command(subcommand)]
        command: LoopCommand,
        #[arg(long, global = true, env = "OVERSEER_INPUT_SOCKET", default_value = crate::shim::protocol::DEFAULT_SOCKET)]
        socket: std::path::PathBuf,
    },
    /// Send AGENT a message (the words given, else stdin); the operator types it in
    /// and this waits for the delivery to be confirmed.
    Send {
        #[arg(add = ArgValueCandidates::new(crate::completion::agent_names))]
        agent: String,
        /// The message; when absent it is read from stdin.
        message: Vec<String>,
        #[arg(short, long, env = "OVERSEER_NAMESPACE")]
        namespace: Option<String>,
        /// Recorded as the sender (in an agent pod: that agent).
        #[arg(long, env = "OVERSEER_AGENT", default_value = "user")]
        from: String,
        /// Seconds to wait for the delivery; 0 only queues it.
        #[arg(long, default_value_t = 120)]
        wait: u64,
    },
    /// In an agent pod: have the pull request at URL watched for this agent (woken
    /// when CI settles or feedback arrives), or stop it with --stop.
    WatchPr {
        url: String,
        #[arg(long)]
        stop: bool,
        #[arg(short, long, env = "OVERSEER_NAMESPACE")]
        namespace: Option<String>,
        /// The agent asking (in an agent pod: itself).
        #[arg(long, env = "OVERSEER_AGENT")]
        agent: String,
    },
    /// Show what AGENT last did: the tail of its pod's log.
    Peek {
        #[arg(add = ArgValueCandidates::new(crate::completion::agent_names))]
        agent: String,
        #[arg(long, default_value_t = 40, value_parser = clap::value_parser!(i64).range(1..=5000))]
        lines: i64,
        #[arg(short, long, env = "OVERSEER_NAMESPACE")]
        namespace: Option<String>,
    },
    /// Follow what AGENT's CLI shows: its pod's log (`-f` streams it until interrupted).
    Logs {
        #[arg(add = ArgValueCandidates::new(crate::completion::agent_names))]
        agent: String,
        /// Stream new lines as they come.
        #[arg(short, long)]
        follow: bool,
        /// Lines of the past to show first (default: all).
        #[arg(long, value_parser = clap::value_parser!(i64).range(0..))]
        tail: Option<i64>,
        #[arg(short, long, env = "OVERSEER_NAMESPACE")]
        namespace: Option<String>,
    },
    /// Take over AGENT's session: a terminal in its tmux (TUI agents). Detach with
    /// the tmux prefix then `d` (C-b d): the agent goes on running. Needs kubectl.
    Attach {
        #[arg(add = ArgValueCandidates::new(crate::completion::agent_names))]
        agent: String,
        #[arg(short, long, env = "OVERSEER_NAMESPACE")]
        namespace: Option<String>,
    },
    /// What is everyone working on: one line per agent.
    Ps {
        /// Namespace (default: the kubeconfig's).
        #[arg(short, long)]
        namespace: Option<String>,
        /// Every namespace.
        #[arg(short = 'A', long)]
        all_namespaces: bool,
        /// The table, the table with more columns, or the Agents as JSON or YAML.
        #[arg(short, long, value_enum, default_value_t = crate::commands::ps::Output::Table)]
        output: crate::commands::ps::Output,
    },
    /// Print the shell completion script of this program (as `overseer` or as the
    /// kubectl plugin's `kubectl-overseer`): `source <(overseer completion bash)`.
    Completion { shell: clap_complete::Shell },
    /// kubectl's plugin completion (`kubectl_complete-overseer`): the candidates for
    /// the last of WORDS, in Cobra's format.
    #[command(name = "__complete", hide = true)]
    KubectlComplete {
        #[arg(last = true)]
        words: Vec<String>,
    },
    /// Print the CustomResourceDefinitions (YAML), or their field reference (Markdown).
    Crd {
        #[arg(long, value_enum, default_value_t = CrdFormat::Yaml)]
        format: CrdFormat,
    },
}

#[derive(Subcommand, Debug)]
pub enum GoalCommand {
    /// Resume a paused goal from its checkpoint (sets the overseer.dev/resume annotation).
    Resume {
        name: String,
        /// Namespace of the goal (default: the kubeconfig's).
        #[arg(short, long)]
        namespace: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum WorkspaceCommand {
    /// Clone OVERSEER_GIT_URL into the current directory on OVERSEER_GIT_BRANCH.
    Sync,
    /// git's credential helper: answers `get` from the mounted credentials Secret,
    /// for requests for `--origin` only.
    Credential {
        #[arg(long)]
        origin: String,
        operation: String,
    },
}

#[derive(Subcommand, Debug)]
pub enum LoopCommand {
    /// The work is genuinely finished.
    Done {
        #[arg(long)]
        reason: Option<String>,
    },
    /// Report what the agent is doing now: one line, shown by `overseer ps` (and
    /// required every `loop.reportEvery` when that is set).
    Progress {
        #[arg(required = true)]
        summary: Vec<String>,
    },
    /// The agent cannot go on without help.
    Block {
        #[arg(long)]
        reason: String,
    },
    /// (Overseer) stop driving AGENT: its loop ends with outcome `released`.
    Release {
        agent: String,
        #[arg(long)]
        reason: String,
        #[arg(short, long, env = "OVERSEER_NAMESPACE")]
        namespace: Option<String>,
    },
    /// Put AGENT in the loop (taking back an earlier done, block or release).
    Add {
        agent: String,
        #[arg(short, long, env = "OVERSEER_NAMESPACE")]
        namespace: Option<String>,
    },
    /// Take AGENT out of the loop.
    Remove {
        agent: String,
        #[arg(short, long, env = "OVERSEER_NAMESPACE")]
        namespace: Option<String>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CrdFormat {
    Yaml,
    Reference,
}

/// Runs one command line; returns the process exit code.
pub async fn dispatch(cli: Cli) -> i32 {
    crate::timeouts::KubeconfigChoice {
        kubeconfig: cli.kubeconfig,
        context: cli.context,
    }
    .choose();
    let result = match cli.command {
        Command::Run(args) => {
            let _telemetry = crate::telemetry::init(args.log_format, &args.log_level);
            crate::operator::run(args).await
        }
        Command::Goal {
            command: GoalCommand::Resume { name, namespace },
        } => crate::commands::goal::resume(&name, namespace.as_deref()).await,
        Command::Step { command } => match crate::step::run(&command).await {
            Ok(code) => return code,
            Err(error) => Err(error.into()),
        },
        Command::Result => crate::step::set_result().await.map_err(Into::into),
        Command::Install { dest } => crate::step::install(&dest).map_err(Into::into),
        Command::Workspace {
            command: WorkspaceCommand::Sync,
        } => crate::workspace::sync::run(),
        Command::Workspace {
            command: WorkspaceCommand::Credential { origin, operation },
        } => crate::workspace::sync::credential(&origin, &operation),
        Command::Shim(args) => {
            let _telemetry = crate::telemetry::init(LogFormat::Text, "info");
            match crate::shim::run(args).await {
                Ok(code) => return code,
                Err(error) => Err(error),
            }
        }
        Command::PaneRun { exit_file, command } => {
            return crate::shim::tmux::run_in_pane(&exit_file, &command).await;
        }
        Command::Input {
            ids,
            confirm: true,
            socket,
            ..
        } => crate::shim::client::confirm(ids, &socket).await,
        Command::Input {
            bytes,
            ids,
            confirm: false,
            socket,
        } => crate::shim::client::input(bytes, ids, &socket).await,
        Command::Loop { command, socket } => {
            use crate::agent::ExitOutcome;
            use crate::commands::agent as commands;
            match command {
                LoopCommand::Done { reason } => {
                    crate::shim::client::exit(ExitOutcome::Done, reason, &socket).await
                }
                LoopCommand::Progress { summary } => {
                    crate::shim::client::progress(summary.join(" "), &socket).await
                }
                LoopCommand::Block { reason } => {
                    crate::shim::client::exit(ExitOutcome::Blocked, Some(reason), &socket).await
                }
                LoopCommand::Release {
                    agent,
                    reason,
                    namespace,
                } => commands::release(namespace.as_deref(), &agent, &reason).await,
                LoopCommand::Add { agent, namespace } => {
                    commands::set_loop(namespace.as_deref(), &agent, true).await
                }
                LoopCommand::Remove { agent, namespace } => {
                    commands::set_loop(namespace.as_deref(), &agent, false).await
                }
            }
        }
        Command::Send {
            agent,
            message,
            namespace,
            from,
            wait,
        } => match read_message(message).await {
            Ok(text) => {
                let wait = Duration::from_secs(wait);
                crate::commands::agent::send(namespace.as_deref(), &agent, &from, &text, wait).await
            }
            Err(error) => Err(error),
        },
        Command::WatchPr {
            url,
            stop,
            namespace,
            agent,
        } => crate::commands::agent::watch_pr(namespace.as_deref(), &agent, &url, stop).await,
        Command::Peek {
            agent,
            lines,
            namespace,
        } => crate::commands::agent::peek(namespace.as_deref(), &agent, lines).await,
        Command::Ps {
            namespace,
            all_namespaces,
            output,
        } => crate::commands::ps::run(namespace.as_deref(), all_namespaces, output).await,
        Command::Logs {
            agent,
            follow,
            tail,
            namespace,
        } => crate::commands::session::logs(namespace.as_deref(), &agent, follow, tail).await,
        Command::Attach { agent, namespace } => {
            crate::commands::session::attach(namespace.as_deref(), &agent).await
        }
        Command::Completion { shell } => {
            crate::completion::print_script(shell, <Cli as clap::CommandFactory>::command());
            Ok(())
        }
        Command::KubectlComplete { words } => {
            let command = <Cli as clap::CommandFactory>::command();
            print!("{}", crate::completion::for_kubectl(command, &words));
            Ok(())
        }
        Command::Crd { format } => match format {
            CrdFormat::Yaml => crate::crd::all_yaml().map(|yaml| print!("{yaml}")),
            CrdFormat::Reference => crate::crd::reference_markdown().map(|md| print!("{md}")),
        },
    };
    match result {
        Ok(()) => 0,
        Err(error) => {
            eprintln!("error: {error}");
            1
        }
    }
}

/// The words given, else all of stdin.
async fn read_message(words: Vec<String>) -> crate::Result<String> {
    if !words.is_empty() {
        return Ok(words.join(" "));
    }
    use tokio::io::AsyncReadExt;
    let mut text = String::new();
    tokio::io::stdin()
        .take(crate::agent::MAX_SEND_BYTES as u64 + 1)
        .read_to_string(&mut text)
        .await?;
    Ok(text)
}
