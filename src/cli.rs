//! The command line of the one `overseer` binary: operator, in-pod supervisor and CLI.

use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use clap_complete::ArgValueCandidates;

use crate::api::pod_env;
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
    /// The namespace, as kubectl's `-n` (default: the kubeconfig's; in an agent pod,
    /// its own). For `run`: watch only this namespace (default: every namespace).
    #[arg(
        short = 'n',
        long,
        global = true,
        env = pod_env::NAMESPACE,
        value_name = "NAMESPACE"
    )]
    pub namespace: Option<String>,
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
    #[command(hide = true)]
    Step {
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// In a step pod: set the step's result (read from stdin, at most 4 KiB).
    #[command(hide = true)]
    Result,
    /// In an agent's pod: the CLI's pre-tool hook; judges the tool call on stdin
    /// against the agent's guards (exit 2 blocks it, the reason on stderr; for copilot a
    /// deny on stdout).
    #[command(hide = true)]
    Guard {
        #[arg(long, value_enum)]
        runtime: crate::guard::hook::HookRuntime,
        #[arg(long, default_value = crate::guard::POLICY_PATH)]
        policy: std::path::PathBuf,
        #[arg(long, default_value = crate::shim::protocol::DEFAULT_SOCKET)]
        socket: std::path::PathBuf,
    },
    /// In an init container: copy this binary to DEST.
    #[command(hide = true)]
    Install { dest: std::path::PathBuf },
    /// In an init container: clone the workspace's git source (kept when a clone is
    /// there already); and git's credential helper for it.
    #[command(hide = true)]
    Workspace {
        #[command(subcommand)]
        command: WorkspaceCommand,
    },
    /// In an agent pod: run the agent CLI under supervision (`overseer shim -- CMD...`).
    #[command(hide = true)]
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
    #[command(hide = true)]
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
        #[arg(long, env = pod_env::INPUT_SOCKET, default_value = crate::shim::protocol::DEFAULT_SOCKET)]
        socket: std::path::PathBuf,
    },
    /// In an agent pod: report progress or end this agent's loop (`overseer loop progress|done|block`).
    Loop {
        #[command(subcommand)]
        command: LoopCommand,
        #[arg(long, global = true, hide = true, env = pod_env::INPUT_SOCKET, default_value = crate::shim::protocol::DEFAULT_SOCKET)]
        socket: std::path::PathBuf,
    },
    /// Send AGENT a message (the words given, else stdin); the operator types it in
    /// and this waits for the delivery to be confirmed.
    Send {
        #[arg(add = ArgValueCandidates::new(crate::completion::agent_names))]
        agent: String,
        /// The message; when absent it is read from stdin.
        message: Vec<String>,
        /// Recorded as the sender (in an agent pod: that agent).
        #[arg(long, env = pod_env::AGENT, default_value = "user")]
        from: String,
        /// Seconds to wait for the delivery; 0 only queues it.
        #[arg(long, default_value_t = 120)]
        wait: u64,
    },
    /// In an agent pod: have the pull request at URL watched for this agent (woken
    /// when CI settles or feedback arrives), or stop it with --stop.
    #[command(hide = true)]
    WatchPr {
        url: String,
        #[arg(long)]
        stop: bool,
        /// The agent asking (in an agent pod: itself).
        #[arg(long, env = pod_env::AGENT)]
        agent: String,
    },
    /// In an agent pod: ask your overseer (and, unanswered, a person) for help. The
    /// reason is read with `overseer escalations`, never typed into anyone.
    #[command(hide = true)]
    Escalate {
        #[arg(long, default_value = "warning", value_parser = crate::commands::escalation::parse_severity)]
        severity: crate::kinds::agent::Severity,
        /// What you need; `-` reads it from stdin.
        #[arg(long)]
        reason: String,
        /// The agent asking (in an agent pod: itself).
        #[arg(long, env = pod_env::AGENT)]
        agent: String,
        /// Seconds to wait for the operator to open it.
        #[arg(long, default_value_t = 10)]
        wait: u64,
    },
    /// In an agent pod: mail to the members of your swarm (`overseer mail` alone: what
    /// became of what you sent).
    #[command(hide = true)]
    Mail {
        #[command(subcommand)]
        command: Option<MailCommand>,
        /// The agent (in an agent pod: itself).
        #[arg(long, env = pod_env::AGENT)]
        agent: String,
    },
    /// In an agent pod: ask your swarm for a new member NAME in ROLE, with a task (its
    /// prompt; `-` reads it from stdin), or cancel one you spawned. Prints the answer:
    /// refused with the reason (exit 1), queued, or running.
    #[command(hide = true)]
    Spawn {
        name: String,
        #[arg(long)]
        role: Option<String>,
        /// Its task; `-` reads it from stdin.
        #[arg(long)]
        task: Option<String>,
        /// Cancel the member NAME you spawned (queued: dropped; running: deleted).
        #[arg(long, conflicts_with_all = ["role", "task"])]
        cancel: bool,
        /// After the answer, wait until the member has ended and say how.
        #[arg(long)]
        wait: bool,
        /// Seconds to wait for the operator's answer.
        #[arg(long, default_value_t = 30)]
        timeout: u64,
        /// The agent asking (in an agent pod: itself).
        #[arg(long, env = pod_env::AGENT)]
        agent: String,
    },
    /// In a swarm member's pod: claim files of the workspace (a directory claims what
    /// it holds) so that no other member edits them; refused with the holder and since
    /// when (exit 1). `--release` gives the PATHs (or, without any, all yours) up.
    #[command(hide = true)]
    Claim {
        paths: Vec<String>,
        #[arg(long)]
        release: bool,
        /// Seconds to wait for the operator's answer.
        #[arg(long, default_value_t = 30)]
        timeout: u64,
        /// The agent claiming (in an agent pod: itself).
        #[arg(long, env = pod_env::AGENT)]
        agent: String,
    },
    /// In a swarm member's pod: the files claimed in your swarm, by whom and since when.
    #[command(hide = true)]
    Claims {
        /// The agent (in an agent pod: itself).
        #[arg(long, env = pod_env::AGENT)]
        agent: String,
    },
    /// In an agent pod: land your pushed work through your swarm's merge queue
    /// (`overseer merge` alone: what became of your requests).
    #[command(hide = true)]
    Merge {
        #[command(subcommand)]
        command: Option<MergeCommand>,
        /// The agent (in an agent pod: itself).
        #[arg(long, env = pod_env::AGENT, default_value = "")]
        agent: String,
    },
    /// List the escalations of AGENT (or of every agent here), with their reasons.
    Escalations {
        #[arg(add = ArgValueCandidates::new(crate::completion::agent_names))]
        agent: Option<String>,
    },
    /// Acknowledge AGENT's open escalations (all, or up to --id).
    Ack {
        #[arg(add = ArgValueCandidates::new(crate::completion::agent_names))]
        agent: String,
        #[arg(long)]
        id: Option<i64>,
        /// Recorded as who acknowledged (in an agent pod: that agent).
        #[arg(long, env = pod_env::AGENT, default_value = "user")]
        from: String,
    },
    /// Show what AGENT last did: the tail of its pod's log.
    Peek {
        #[arg(add = ArgValueCandidates::new(crate::completion::agent_names))]
        agent: String,
        #[arg(long, default_value_t = 40, value_parser = clap::value_parser!(i64).range(1..=5000))]
        lines: i64,
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
    },
    /// The console in the browser: every swarm, goal and agent you can read, live, and
    /// what you may do to them, served on 127.0.0.1 with your own kubeconfig.
    Ui(crate::console::UiArgs),
    /// Take over AGENT's session: a terminal in its tmux (TUI agents). Detach with
    /// the tmux prefix then `d` (C-b d): the agent goes on running. Needs kubectl.
    Attach {
        #[arg(add = ArgValueCandidates::new(crate::completion::agent_names))]
        agent: String,
    },
    /// What is everyone working on: one line per agent.
    Ps {
        #[command(flatten)]
        list: crate::commands::output::ListArgs,
        /// After the list, print each agent that changes (kubectl's `-w`).
        #[arg(short, long)]
        watch: bool,
    },
    /// Each goal's progress through its steps: one line per goal.
    Goals {
        #[command(flatten)]
        list: crate::commands::output::ListArgs,
    },
    /// Each swarm's state, overseer, members and goals: one line per swarm.
    Swarms {
        #[command(flatten)]
        list: crate::commands::output::ListArgs,
    },
    /// This program's version, the API server's and the operator's in the cluster.
    Version {
        /// This program's version only.
        #[arg(long)]
        client: bool,
        /// json or yaml.
        #[arg(short, long, value_name = "FORMAT")]
        output: Option<String>,
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
    /// Resume a paused goal from its checkpoint: clears `spec.paused` when set, and sets
    /// the overseer.dev/resume annotation (which resumes a goal paused on a failure).
    Resume { name: String },
    /// Pause a goal (`spec.paused`): no new step starts; a running step finishes.
    Pause { name: String },
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
pub enum MailCommand {
    /// Send mail to TO: a member, `overseer`, `lead` (your overseer), `@role` or
    /// `@all`. The message is the words given, else stdin (`-`).
    Send {
        to: String,
        message: Vec<String>,
        /// One word saying what it is (finding, question, done, ...).
        #[arg(long = "type")]
        type_: Option<String>,
        /// Noticed as soon as the recipient has no prompt waiting, even mid-turn.
        #[arg(long)]
        urgent: bool,
        /// Seconds to wait for the operator's receipts.
        #[arg(long, default_value_t = 10)]
        wait: u64,
    },
    /// Print your unread mail and mark it read.
    Read,
}

#[derive(Subcommand, Debug)]
pub enum MergeCommand {
    /// Ask to land the workspace's HEAD, which must be pushed to its branch. Prints the
    /// answer; `--wait` waits until it landed (exit 0) or not (exit 1, with why).
    Request {
        /// The workspace (its HEAD and branch are what is asked for).
        #[arg(long, default_value = crate::workspace::DIR)]
        dir: std::path::PathBuf,
        #[arg(long)]
        wait: bool,
        /// Seconds to wait for the operator's answer.
        #[arg(long, default_value_t = 30)]
        timeout: u64,
    },
    /// In a merge queue's pod: one attempt at landing a commit (the operator's).
    #[command(hide = true)]
    Land,
}

#[derive(Subcommand, Debug)]
pub enum LoopCommand {
    /// In an agent pod: the work is genuinely finished.
    #[command(hide = true)]
    Done {
        #[arg(long)]
        reason: Option<String>,
    },
    /// In an agent pod: report what the agent is doing now: one line, shown by
    /// `overseer ps` (and required every `loop.reportEvery` when that is set).
    #[command(hide = true)]
    Progress {
        #[arg(required = true)]
        summary: Vec<String>,
    },
    /// In an agent pod: the agent cannot go on without help.
    #[command(hide = true)]
    Block {
        #[arg(long)]
        reason: String,
    },
    /// (Overseer) stop driving AGENT: its loop ends with outcome `released`.
    Release {
        agent: String,
        #[arg(long)]
        reason: String,
    },
    /// Put AGENT in the loop (taking back an earlier done, block or release).
    Add { agent: String },
    /// Take AGENT out of the loop.
    Remove { agent: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CrdFormat {
    Yaml,
    Reference,
}

/// Runs one command line; returns the process exit code.
pub async fn dispatch(cli: Cli) -> i32 {
    crate::kubernetes::timeouts::KubeconfigChoice {
        kubeconfig: cli.kubeconfig,
        context: cli.context,
    }
    .choose();
    let namespace = cli.namespace;
    let result = match cli.command {
        Command::Run(mut args) => {
            args.namespace = namespace;
            let _telemetry = crate::telemetry::init(args.log_format, &args.log_level);
            crate::operator::run(args).await.map(|()| 0)
        }
        Command::Shim(mut args) => {
            args.namespace = namespace;
            let _telemetry = crate::telemetry::init(LogFormat::Text, "info");
            crate::shim::run(args).await
        }
        // A run beside others that writes lands its work once the agent succeeded.
        Command::Step { command } => crate::step::run(&command)
            .await
            .map(|code| crate::goal::land::after_step(code, &crate::step::termination_log()))
            .map_err(Into::into),
        Command::Guard {
            runtime,
            policy,
            socket,
        } => Ok(crate::guard::hook::run(runtime, &policy, &socket).await),
        Command::PaneRun { exit_file, command } => {
            Ok(crate::shim::tmux::run_in_pane(&exit_file, &command).await)
        }
        in_pod @ (Command::Result
        | Command::Install { .. }
        | Command::Workspace { .. }
        | Command::Input { .. }
        | Command::Loop { .. }
        | Command::WatchPr { .. }
        | Command::Escalate { .. }
        | Command::Mail { .. }
        | Command::Spawn { .. }
        | Command::Claim { .. }
        | Command::Claims { .. }
        | Command::Merge { .. }) => in_pod_command(in_pod, namespace.as_deref())
            .await
            .map(|()| 0),
        person => person_command(person, namespace.as_deref())
            .await
            .map(|()| 0),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            let code = error.exit_code();
            eprintln!("error: {}", explain(error).await);
            code
        }
    }
}

/// What runs inside the operator's pods (hidden from help and completion) and the
/// overseer's own loop commands.
async fn in_pod_command(command: Command, namespace: Option<&str>) -> crate::Result<()> {
    match command {
        Command::Result => crate::step::set_result().await.map_err(Into::into),
        Command::Install { dest } => crate::step::install(&dest).map_err(Into::into),
        Command::Workspace {
            command: WorkspaceCommand::Sync,
        } => crate::workspace::sync::run(),
        Command::Workspace {
            command: WorkspaceCommand::Credential { origin, operation },
        } => crate::workspace::sync::credential(&origin, &operation),
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
        Command::Loop { command, socket } => loop_command(command, &socket, namespace).await,
        Command::WatchPr { url, stop, agent } => {
            crate::commands::agent::watch_pr(namespace, &agent, &url, stop).await
        }
        Command::Escalate {
            severity,
            reason,
            agent,
            wait,
        } => {
            let reason = match reason.as_str() {
                "-" => read_message(Vec::new()).await?,
                _ => reason,
            };
            let wait = Duration::from_secs(wait);
            crate::commands::escalation::escalate(namespace, &agent, severity, &reason, wait).await
        }
        Command::Mail { command, agent } => mail_command(command, &agent, namespace).await,
        Command::Merge { command, agent } => merge_command(command, &agent, namespace).await,
        Command::Claim {
            paths,
            release,
            timeout,
            agent,
        } => {
            let wait = Duration::from_secs(timeout);
            crate::commands::claim::claim(namespace, &agent, &paths, release, wait).await
        }
        Command::Claims { agent } => crate::commands::claim::list(namespace, &agent).await,
        Command::Spawn {
            name,
            role,
            task,
            cancel,
            wait,
            timeout,
            agent,
        } => {
            let task = match task.as_deref() {
                Some("-") => Some(read_message(Vec::new()).await?),
                _ => task,
            };
            let ask = crate::commands::spawn::Ask {
                name: &name,
                role: role.as_deref(),
                task: task.as_deref(),
                cancel,
            };
            let timeout = Duration::from_secs(timeout);
            crate::commands::spawn::spawn(namespace, &agent, &ask, timeout, wait).await
        }
        other => unreachable!("not an in-pod command: {other:?}"),
    }
}

/// Prints what a command did.
fn say(done: crate::Result<String>) -> crate::Result<()> {
    println!("{}", done?);
    Ok(())
}

async fn loop_command(
    command: LoopCommand,
    socket: &std::path::Path,
    namespace: Option<&str>,
) -> crate::Result<()> {
    use crate::agent::ExitOutcome;
    use crate::commands::agent as commands;
    match command {
        LoopCommand::Done { reason } => {
            crate::shim::client::exit(ExitOutcome::Done, reason, socket).await
        }
        LoopCommand::Progress { summary } => {
            crate::shim::client::progress(summary.join(" "), socket).await
        }
        LoopCommand::Block { reason } => {
            crate::shim::client::exit(ExitOutcome::Blocked, Some(reason), socket).await
        }
        LoopCommand::Release { agent, reason } => {
            say(commands::release(namespace, &agent, &reason).await)
        }
        LoopCommand::Add { agent } => say(commands::set_loop(namespace, &agent, true).await),
        LoopCommand::Remove { agent } => say(commands::set_loop(namespace, &agent, false).await),
    }
}

async fn merge_command(
    command: Option<MergeCommand>,
    agent: &str,
    namespace: Option<&str>,
) -> crate::Result<()> {
    use crate::commands::merge;
    if agent.is_empty() && !matches!(command, Some(MergeCommand::Land)) {
        return Err(crate::Error::Usage(
            "--agent (OVERSEER_AGENT) is not set".into(),
        ));
    }
    match command {
        Some(MergeCommand::Land) => crate::commands::merge::land(),
        None => merge::status(namespace, agent).await,
        Some(MergeCommand::Request { dir, wait, timeout }) => {
            merge::request(namespace, agent, &dir, Duration::from_secs(timeout), wait).await
        }
    }
}

async fn mail_command(
    command: Option<MailCommand>,
    agent: &str,
    namespace: Option<&str>,
) -> crate::Result<()> {
    use crate::commands::mail;
    match command {
        None => mail::status(namespace, agent).await,
        Some(MailCommand::Read) => mail::read(namespace, agent).await,
        Some(MailCommand::Send {
            to,
            message,
            type_,
            urgent,
            wait,
        }) => {
            let words = if message == ["-"] {
                Vec::new()
            } else {
                message
            };
            let body = read_message(words).await?;
            let outgoing = mail::Outgoing {
                to: &to,
                type_: type_.as_deref(),
                urgent,
                body: &body,
            };
            mail::send(namespace, agent, &outgoing, Duration::from_secs(wait)).await
        }
    }
}

/// A person's commands: views, messages, sessions, and the generated files.
async fn person_command(command: Command, namespace: Option<&str>) -> crate::Result<()> {
    use crate::commands::{agent, output, session};
    match command {
        Command::Goal {
            command: GoalCommand::Resume { name },
        } => say(crate::commands::goal::resume(&name, namespace).await),
        Command::Goal {
            command: GoalCommand::Pause { name },
        } => say(crate::commands::goal::pause(&name, namespace).await),
        Command::Send {
            agent: name,
            message,
            from,
            wait,
        } => {
            let text = read_message(message).await?;
            agent::send(namespace, &name, &from, &text, Duration::from_secs(wait)).await
        }
        Command::Peek { agent: name, lines } => agent::peek(namespace, &name, lines).await,
        Command::Escalations { agent: name } => {
            crate::commands::escalation::list(namespace, name.as_deref()).await
        }
        Command::Ack {
            agent: name,
            id,
            from,
        } => crate::commands::escalation::ack(namespace, &name, id, &from).await,
        Command::Ps { list, watch } => crate::commands::ps::run(namespace, &list, watch).await,
        Command::Goals { list } => output::list::<crate::goal::Goal>(namespace, &list).await,
        Command::Swarms { list } => output::list::<crate::swarm::Swarm>(namespace, &list).await,
        Command::Version { client, output } => {
            crate::commands::version::run(client, output.as_deref()).await
        }
        Command::Logs {
            agent: name,
            follow,
            tail,
        } => session::logs(namespace, &name, follow, tail).await,
        Command::Attach { agent: name } => session::attach(namespace, &name).await,
        Command::Ui(args) => crate::console::run(args, namespace).await,
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
        other => unreachable!("not a person's command: {other:?}"),
    }
}

/// The error as a person reads it: one that never reached the API server names the
/// server it tried (as kubectl's "The connection to the server ... was refused").
async fn explain(error: crate::Error) -> String {
    let unreachable = matches!(
        &error,
        crate::Error::Kube(kube::Error::HyperError(_) | kube::Error::Service(_))
    );
    if !unreachable {
        return error.to_string();
    }
    match crate::kubernetes::timeouts::config().await {
        Ok(config) => format!(
            "cannot reach the Kubernetes API server at {}: {error}",
            config.cluster_url
        ),
        Err(_) => error.to_string(),
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

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// clap checks the command line's definition only when it is built; a global
    /// argument that is also required, for one, panics at the first run.
    #[test]
    fn the_command_line_is_well_formed() {
        super::Cli::command().debug_assert();
    }
}
