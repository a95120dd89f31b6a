//! `overseer shim -- CMD...`: the in-pod supervisor. It runs the agent CLI (TUI
//! inside tmux, headless as a child), tracks what it is doing, reports that to the
//! Agent's status (field manager `overseer-shim`) on every change plus a heartbeat
//! (`HEARTBEAT_FLOOR`), and takes input and the agent's self-exit on a local socket.

pub mod activity;
pub mod client;
mod delivered;
pub mod headless;
pub mod mirror;
pub mod protocol;
pub mod seed;
pub mod tmux;
pub mod usage;

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot};
use tracing::{info, warn};

use crate::agent::{Activity, ActivityState, Agent, AgentExit};
use crate::api::{LOOP_MANAGER, RuntimeMode, RuntimeName, SHIM_MANAGER};
use crate::runtimes;
use activity::{Observation, Tracker};
use protocol::{Reply, Request};

/// How often the agent is looked at.
const POLL: Duration = Duration::from_millis(250);
/// How soon a failed status write is tried again.
const RETRY: Duration = Duration::from_secs(1);
/// How long one status write may take: the shim's loop (and the input it takes) waits
/// on it, and a write that fails is retried a second later.
const REPORT_DEADLINE: Duration = Duration::from_secs(10);
/// Pause between typing a message and pressing Enter.
const TYPE_PAUSE: Duration = Duration::from_millis(300);

#[derive(Args, Debug, Clone)]
pub struct ShimArgs {
    /// The Agent this pod runs (no status is reported without it).
    #[arg(long, env = "OVERSEER_AGENT")]
    pub agent: Option<String>,
    /// Namespace of the Agent (default: the client's).
    /// Set from the global `-n/--namespace` (src/cli.rs).
    #[arg(skip)]
    pub namespace: Option<String>,
    /// The attempt (spawn id) this pod is.
    #[arg(long, env = "OVERSEER_ATTEMPT", default_value_t = 1)]
    pub attempt: i64,
    /// Runtime name (claude, codex, pi, copilot, cursor, custom): its prompt patterns and resume flag.
    #[arg(long, env = "OVERSEER_RUNTIME", default_value = "custom")]
    pub runtime: String,
    /// tui or headless.
    #[arg(long, env = "OVERSEER_MODE", default_value = "tui")]
    pub mode: String,
    /// Heartbeat: a status report even when nothing changes, every this long or every
    /// 5 minutes, whichever is longer (`off`: none).
    #[arg(long, env = "OVERSEER_INTERVAL", default_value = "15s")]
    pub interval: String,
    /// No output change for this long counts as idle.
    #[arg(long, env = "OVERSEER_QUIET", default_value = "5s")]
    pub quiet: String,
    /// The local socket `overseer input` and `overseer loop` talk to.
    #[arg(long, env = "OVERSEER_INPUT_SOCKET", default_value = protocol::DEFAULT_SOCKET)]
    pub socket: PathBuf,
    /// The agent's first prompt (headless: the first run's; TUI: typed once it is ready).
    #[arg(long, env = "OVERSEER_PROMPT")]
    pub prompt: Option<String>,
    /// The agent CLI.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

/// Where the shim's view of the agent goes: the Agent's status.
struct Reporter {
    api: Api<Agent>,
    name: String,
}

impl Reporter {
    async fn connect(args: &ShimArgs) -> crate::Result<Option<Reporter>> {
        let Some(name) = args.agent.clone() else {
            return Ok(None);
        };
        let client = crate::kubernetes::timeouts::client(REPORT_DEADLINE).await?;
        let namespace = args
            .namespace
            .clone()
            .unwrap_or_else(|| client.default_namespace().to_string());
        Ok(Some(Reporter {
            api: Api::namespaced(client, &namespace),
            name,
        }))
    }

    async fn report(&self, activity: &Activity) -> Result<(), kube::Error> {
        self.apply(SHIM_MANAGER, json!({"activity": activity}))
            .await
    }

    /// The exit goes once, under the loop's own field manager: later activity reports
    /// do not re-assert it, so `overseer loop add` can take it back.
    async fn record_exit(&self, exit: &AgentExit) -> Result<(), kube::Error> {
        self.apply(LOOP_MANAGER, json!({"exit": exit})).await
    }

    async fn apply(&self, manager: &str, status: serde_json::Value) -> Result<(), kube::Error> {
        crate::api::apply_status(&self.api, &self.name, manager, &status).await
    }
}

enum Driver {
    Tui(tmux::Tmux),
    Headless(Box<headless::Headless>),
}

struct Shim {
    args: ShimArgs,
    runtime: &'static runtimes::Runtime,
    driver: Driver,
    tracker: Tracker,
    reporter: Option<Reporter>,
    /// A report is due (a change not yet written, or a failed write).
    report_due: bool,
    /// The last write failed (the API server is away, or the Agent does not exist yet).
    report_failed: bool,
    last_report: tokio::time::Instant,
    /// The TUI's first prompt, typed once the agent first sits idle.
    pending_prompt: Option<String>,
    /// The pane as last seen, to tell a change.
    last_screen: Option<String>,
    /// What of the pane has been mirrored to the container log.
    mirror: mirror::Mirror,
    /// The delivery ids confirmed so far.
    delivered: delivered::Delivered,
    /// The agent's last `overseer loop progress`: its summary, and when.
    progress: Option<(String, Timestamp)>,
    /// The first-run dialogs answered so far.
    dialogs_answered: DialogsAnswered,
}

/// How often each first-run dialog (by its index in the registry) was answered, until
/// when no dialog is answered again (the CLI may take a moment to move on), and whether
/// the CLI is still starting: dialogs are answered only then.
struct DialogsAnswered {
    counts: Vec<u32>,
    quiet_until: Option<tokio::time::Instant>,
    /// From the CLI's start until the first input is typed into it. Afterwards the
    /// screen holds text the model wrote, and keys sent on its words would answer a
    /// question nobody approved.
    starting: bool,
}

impl DialogsAnswered {
    fn new(runtime: &runtimes::Runtime) -> Self {
        DialogsAnswered {
            counts: vec![0; runtime.first_run_dialogs.len()],
            quiet_until: None,
            starting: true,
        }
    }
}

/// Mirrors agent output to stdout, the container log (the shim's own log is stderr).
fn print_lines(lines: &[String]) {
    use std::io::Write;
    if lines.is_empty() {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    for line in lines {
        let _ = writeln!(stdout, "{line}");
    }
    let _ = stdout.flush();
}

/// Links an agent's or step's composed instructions (for an agent a mounted ConfigMap,
/// updated in place) into the working directory under the runtime's file name.
/// Returns false when they cannot be placed there: the workspace has its own such file
/// (the repository's), or is read-only (a scout's).
pub(crate) fn link_instructions(source: &std::path::Path) -> bool {
    let Some(file) = source.file_name() else {
        return false;
    };
    let target = PathBuf::from(file);
    match std::fs::symlink_metadata(&target) {
        Ok(meta) if !meta.file_type().is_symlink() => {
            warn!(file = %target.display(), source = %source.display(), "the workspace has its own instruction file; it is left as it is");
            return false;
        }
        Ok(_) => {
            let _ = std::fs::remove_file(&target);
        }
        Err(_) => {}
    }
    match std::os::unix::fs::symlink(source, &target) {
        Ok(()) => {
            info!(file = %target.display(), "linked the instructions");
            true
        }
        Err(error) => {
            info!(%error, "instructions not linked (read-only workspace?)");
            false
        }
    }
}

/// The first prompt given to the CLI: the instructions that could not be placed
/// where it reads them, then the agent's own prompt.
pub(crate) fn first_prompt(
    unplaced_instructions: Option<&str>,
    prompt: Option<&str>,
) -> Option<String> {
    let parts: Vec<&str> = [unplaced_instructions, prompt]
        .into_iter()
        .flatten()
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// The shortest time between two heartbeats, status writes that change nothing (an
/// `--interval` of `off` writes none). Changes are written at once. One write per
/// `loop.interval` (15 s) was 667 status writes a second at 10,000 agents, each an
/// event for every watcher of Agents, to say what the kubelet already tells: the shim
/// is the container's main process, so a dead shim is an ended container
/// (docs/design-notes.md, "The shim's heartbeat").
const HEARTBEAT_FLOOR: Duration = Duration::from_secs(300);

/// Runs the shim until SIGTERM; returns the process exit code.
pub async fn run(args: ShimArgs) -> crate::Result<i32> {
    let settings = Settings::of(&args)?;
    let runtime = runtimes::lookup(settings.runtime);
    let run_dir = args
        .socket
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    tokio::fs::create_dir_all(&run_dir).await?;
    let unplaced_instructions = std::env::var_os("OVERSEER_INSTRUCTIONS")
        .map(PathBuf::from)
        .filter(|source| !link_instructions(source))
        .and_then(|source| std::fs::read_to_string(source).ok());
    let _ = tokio::fs::remove_file(&args.socket).await;
    let listener = UnixListener::bind(&args.socket)?;
    let reporter = Reporter::connect(&args).await?;

    let prompt = first_prompt(unplaced_instructions.as_deref(), args.prompt.as_deref());
    seed::seed(runtime, &args.command);
    let (driver, pending_prompt) =
        start_driver(settings.mode, runtime, &run_dir, &args.command, prompt).await?;
    info!(agent = args.agent.as_deref().unwrap_or("-"), attempt = args.attempt, socket = %args.socket.display(), "shim started");
    let shim = Shim {
        tracker: Tracker::new(Timestamp::now(), settings.quiet, runtime.waiting_patterns),
        runtime,
        driver,
        reporter,
        report_due: true,
        report_failed: false,
        last_report: tokio::time::Instant::now(),
        pending_prompt,
        last_screen: None,
        mirror: mirror::Mirror::default(),
        delivered: delivered::Delivered::default(),
        progress: None,
        dialogs_answered: DialogsAnswered::new(runtime),
        args,
    };
    supervise(shim, listener, settings.heartbeat_every).await
}

/// The shim's flags, read: the runtime and mode, how long a still screen takes to
/// count as idle, and how often a report is sent when nothing changes.
struct Settings {
    runtime: RuntimeName,
    mode: RuntimeMode,
    quiet: Duration,
    heartbeat_every: Option<Duration>,
}

impl Settings {
    fn of(args: &ShimArgs) -> crate::Result<Settings> {
        let runtime = serde_json::from_value(json!(args.runtime))
            .map_err(|_| crate::Error::Usage(format!("unknown runtime {:?}", args.runtime)))?;
        let mode = serde_json::from_value(json!(args.mode)).map_err(|_| {
            crate::Error::Usage(format!("unknown mode {:?} (tui or headless)", args.mode))
        })?;
        let quiet = crate::duration::parse(&args.quiet)
            .ok_or_else(|| crate::Error::Usage(format!("bad --quiet {:?}", args.quiet)))?;
        let heartbeat_every = crate::duration::parse_heartbeat(&args.interval)
            .ok_or_else(|| crate::Error::Usage(format!("bad --interval {:?}", args.interval)))?
            .map(|interval| interval.max(HEARTBEAT_FLOOR));
        Ok(Settings {
            runtime,
            mode,
            quiet,
            heartbeat_every,
        })
    }
}

/// Starts the agent CLI: in tmux (its first prompt typed once it is ready), or
/// headless with the prompt among its arguments.
async fn start_driver(
    mode: RuntimeMode,
    runtime: &'static runtimes::Runtime,
    run_dir: &Path,
    command: &[String],
    prompt: Option<String>,
) -> crate::Result<(Driver, Option<String>)> {
    Ok(match mode {
        RuntimeMode::Tui => (
            Driver::Tui(tmux::Tmux::start(run_dir, command).await?),
            prompt,
        ),
        RuntimeMode::Headless => {
            let mut headless = Box::new(headless::Headless::new(
                runtime.usage.as_ref().map(|usage| usage.format),
            ));
            let command = match &prompt {
                Some(prompt) => runtimes::with_prompt(runtime, command, false, prompt),
                None => command.to_vec(),
            };
            headless.start(&command)?;
            (Driver::Headless(headless), None)
        }
    })
}

/// Watches the agent and answers the socket until SIGTERM; then stops the agent.
async fn supervise(
    mut shim: Shim,
    listener: UnixListener,
    heartbeat_every: Option<Duration>,
) -> crate::Result<i32> {
    let (requests, mut incoming) = mpsc::channel::<(Request, oneshot::Sender<Reply>)>(16);
    tokio::spawn(accept(listener, requests));
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut poll = tokio::time::interval(POLL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let heartbeat = heartbeat_every.map(|every| shim.last_report + every);
        tokio::select! {
            _ = poll.tick() => {
                shim.look().await;
                // The first prompt goes in before the idle that let it is reported: an
                // agent that has not had its prompt has not stopped.
                shim.type_first_prompt().await;
                // A change is reported at once; a failed write is retried once a second.
                if shim.report_due && (!shim.report_failed || shim.last_report.elapsed() >= RETRY) {
                    shim.report().await;
                }
            }
            _ = sleep_until(heartbeat) => shim.report().await,
            Some((request, reply)) = incoming.recv() => {
                let answer = shim.handle(request).await;
                let _ = reply.send(answer);
            }
            _ = terminate.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    info!("stopping the agent");
    match &mut shim.driver {
        Driver::Tui(tmux) => tmux.kill().await,
        Driver::Headless(headless) => headless.kill().await,
    }
    let _ = tokio::fs::remove_file(&shim.args.socket).await;
    Ok(0)
}

/// Answers the first-run dialog of `runtime` that `dialog_to_answer` picks.
async fn answer_first_run_dialog(
    runtime: &runtimes::Runtime,
    answered: &mut DialogsAnswered,
    tmux: &tmux::Tmux,
    screen: &str,
    asks_a_person: bool,
) {
    const QUIET: Duration = Duration::from_secs(2);
    let now = tokio::time::Instant::now();
    let Some(i) = dialog_to_answer(runtime, answered, screen, asks_a_person, now) else {
        return;
    };
    let dialog = &runtime.first_run_dialogs[i];
    answered.counts[i] += 1;
    answered.quiet_until = Some(now + QUIET);
    info!(dialog = dialog.pattern, keys = ?dialog.keys, "answering a first-run dialog");
    for key in dialog.keys {
        if let Err(error) = tmux.key(key).await {
            warn!(%error, "answering a first-run dialog failed");
            return;
        }
    }
}

/// The first-run dialog (folder trust, theme, the autonomy mode) to answer now: the one
/// showing lowest in the prompt area, a few times at most (`answered` counts them per
/// dialog; one that stays is then left on screen for a person, its activity judged
/// from the screen as any other). Only while the CLI starts, and never while the screen
/// asks a person something: a permission prompt is theirs to answer.
fn dialog_to_answer(
    runtime: &runtimes::Runtime,
    answered: &DialogsAnswered,
    screen: &str,
    asks_a_person: bool,
    now: tokio::time::Instant,
) -> Option<usize> {
    const MAX_ANSWERS: u32 = 3;
    if !answered.starting || asks_a_person || answered.quiet_until.is_some_and(|until| now < until)
    {
        return None;
    }
    dialog_showing(runtime, screen).filter(|&i| answered.counts[i] < MAX_ANSWERS)
}

/// The first-run dialog of `runtime` asking now (its index in the registry): the
/// lowest in the prompt area, since one answered may still show above it.
fn dialog_showing(runtime: &runtimes::Runtime, screen: &str) -> Option<usize> {
    let area = activity::prompt_area(screen);
    runtime
        .first_run_dialogs
        .iter()
        .enumerate()
        .filter_map(|(i, d)| area.rfind(d.pattern).map(|at| (at, i)))
        .max_by_key(|(at, _)| *at)
        .map(|(_, i)| i)
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Serves the socket: one request per connection, answered by the main loop.
async fn accept(listener: UnixListener, requests: mpsc::Sender<(Request, oneshot::Sender<Reply>)>) {
    while let Ok((stream, _)) = listener.accept().await {
        let requests = requests.clone();
        tokio::spawn(async move {
            if let Err(error) = serve(stream, requests).await {
                warn!(%error, "socket client failed");
            }
        });
    }
}

async fn serve(
    stream: UnixStream,
    requests: mpsc::Sender<(Request, oneshot::Sender<Reply>)>,
) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut line = String::new();
    BufReader::new(read.take(protocol::MAX_MESSAGE_BYTES as u64 * 2))
        .read_line(&mut line)
        .await?;
    let reply = match serde_json::from_str::<Request>(&line) {
        Err(error) => Reply::refused(format!("bad request: {error}")),
        Ok(request) => {
            let (tx, rx) = oneshot::channel();
            if requests.send((request, tx)).await.is_err() {
                Reply::refused("the shim is stopping")
            } else {
                rx.await
                    .unwrap_or_else(|_| Reply::refused("the shim is stopping"))
            }
        }
    };
    let mut out = serde_json::to_vec(&reply)?;
    out.push(b'\n');
    write.write_all(&out).await
}

impl Shim {
    fn activity(&self) -> Activity {
        let t = &self.tracker;
        Activity {
            state: t.state,
            since: Some(Time(ceil_to_second(t.since))),
            last_activity_time: Some(Time(t.last_activity)),
            heartbeat_time: Some(Time(Timestamp::now())),
            attempt: Some(self.args.attempt),
            exit_code: t.exit_code.filter(|_| t.state == ActivityState::Exited),
            summary: self.progress.as_ref().map(|(summary, _)| summary.clone()),
            progress_time: self.progress.as_ref().map(|(_, at)| Time(*at)),
            usage: match &self.driver {
                Driver::Headless(headless) => headless.usage(),
                Driver::Tui(_) => None,
            },
        }
    }

    async fn look(&mut self) {
        let now = Timestamp::now();
        let changed = match &mut self.driver {
            Driver::Tui(tmux) => match tmux.look().await {
                Ok(look) => match look.exited {
                    Some(code) => self.tracker.observe(Observation::Exited(code), now),
                    None => {
                        answer_first_run_dialog(
                            self.runtime,
                            &mut self.dialogs_answered,
                            tmux,
                            &look.screen,
                            self.tracker.asks_a_person(&look.screen),
                        )
                        .await;
                        let changed = self.last_screen.as_deref() != Some(look.screen.as_str());
                        if changed {
                            let previous = self.last_screen.as_deref().unwrap_or_default();
                            print_lines(&self.mirror.new_lines(previous, &look.screen));
                        }
                        let state = self.tracker.observe(
                            Observation::Output {
                                changed,
                                text: &look.screen,
                            },
                            now,
                        );
                        self.last_screen = Some(look.screen);
                        state
                    }
                },
                Err(error) => {
                    warn!(%error, "looking at the agent's pane failed");
                    false
                }
            },
            Driver::Headless(headless) => {
                let look = headless.look();
                // New usage is written at once, as a change of state is.
                self.report_due |= look.usage_changed;
                let state = self.tracker.observe(
                    Observation::Output {
                        changed: look.changed,
                        text: &look.tail,
                    },
                    now,
                );
                match look.exited {
                    Some(code) => self.tracker.observe(Observation::Exited(code), now) || state,
                    None => state,
                }
            }
        };
        if changed {
            info!(state = ?self.tracker.state, "activity");
            self.report_due = true;
        }
    }

    async fn report(&mut self) {
        self.last_report = tokio::time::Instant::now();
        let Some(reporter) = &self.reporter else {
            self.report_due = false;
            return;
        };
        match reporter.report(&self.activity()).await {
            Ok(()) => {
                self.report_due = false;
                self.report_failed = false;
            }
            Err(error) => {
                if !self.report_failed {
                    warn!(%error, "reporting activity failed; retrying");
                }
                self.report_failed = true;
            }
        }
    }

    async fn type_first_prompt(&mut self) {
        if self.tracker.state != ActivityState::Idle {
            return;
        }
        if let Some(prompt) = self.pending_prompt.take() {
            let reply = self.deliver(&prompt).await;
            if !reply.ok {
                warn!(
                    error = reply.error.as_deref().unwrap_or_default(),
                    "typing the first prompt failed"
                );
            }
        }
    }

    async fn handle(&mut self, request: Request) -> Reply {
        match request {
            Request::Status => Reply {
                activity: Some(self.activity()),
                ..Reply::ok()
            },
            Request::Input { message, ids } => {
                if self.delivered.all_seen(&ids) {
                    info!(?ids, "delivered before; confirmed without typing it again");
                    return Reply::ok();
                }
                if self.tracker.state == ActivityState::Waiting {
                    // What would be typed now would answer the CLI's question to a
                    // person; the operator holds input until the question is gone.
                    return Reply::refused(protocol::WAITS_ON_A_PERSON);
                }
                let reply = self.deliver(&message).await;
                if reply.ok {
                    self.delivered.record(&ids);
                }
                reply
            }
            Request::Confirm { ids } => {
                if self.delivered.all_seen(&ids) {
                    Reply::ok()
                } else {
                    Reply::refused("this shim has not delivered all of those ids")
                }
            }
            Request::Progress { summary } => self.record_progress(&summary).await,
            Request::Exit { outcome, reason } => {
                let Some(reporter) = &self.reporter else {
                    return Reply::refused(
                        "this shim reports to no Agent (OVERSEER_AGENT is not set)",
                    );
                };
                let exit = AgentExit {
                    outcome,
                    reason: reason.map(|r| r.chars().take(1024).collect()),
                    time: Some(Time(Timestamp::now())),
                    attempt: self.args.attempt,
                };
                match reporter.record_exit(&exit).await {
                    Ok(()) => Reply::ok(),
                    Err(error) => Reply::refused(format!("recording the exit failed: {error}")),
                }
            }
        }
    }

    /// `overseer loop progress`: the summary, on one line and bounded, reported at once
    /// with the activity (the shim owns `status.activity`, so a new attempt's first
    /// report clears the last attempt's summary).
    async fn record_progress(&mut self, summary: &str) -> Reply {
        if self.reporter.is_none() {
            return Reply::refused("this shim reports to no Agent (OVERSEER_AGENT is not set)");
        }
        let Some(summary) = protocol::one_line(summary, protocol::MAX_SUMMARY_CHARS) else {
            return Reply::refused("empty summary");
        };
        self.progress = Some((summary, Timestamp::now()));
        self.report().await;
        if self.report_failed {
            return Reply::refused("reporting the progress failed; the shim retries it");
        }
        Reply::ok()
    }

    /// Delivers a message, stripped of control characters; Ok only when delivery is
    /// confirmed.
    async fn deliver(&mut self, message: &str) -> Reply {
        let message = &protocol::typeable(message);
        if message.trim().is_empty() {
            return Reply::refused("empty message");
        }
        let now = Timestamp::now();
        let resume = runtimes::with_prompt(self.runtime, &self.args.command, true, message);
        match &mut self.driver {
            Driver::Headless(headless) => {
                if headless.running() {
                    return Reply::refused("a run is in progress; the message was not delivered");
                }
                if let Err(error) = headless.start(&resume) {
                    return Reply::refused(format!("starting the resumed run failed: {error}"));
                }
                self.tracker.observe(Observation::Restarted, now);
                self.report_due = true;
                Reply::ok()
            }
            Driver::Tui(tmux) => {
                let before = match tmux.look().await {
                    Ok(look) => look,
                    Err(error) => {
                        return Reply::refused(format!("the agent's pane is unreachable: {error}"));
                    }
                };
                if before.exited.is_some() {
                    // The TUI ended: start it again, resuming its session, then type.
                    let command = runtimes::with_resume(self.runtime, &self.args.command);
                    if let Err(error) = tmux.respawn(&command).await {
                        return Reply::refused(format!("restarting the agent failed: {error}"));
                    }
                    self.tracker.observe(Observation::Restarted, now);
                    self.report_due = true;
                    if !wait_for_screen(tmux).await {
                        return Reply::refused("the restarted agent showed nothing within 15s");
                    }
                }
                let before = tmux.look().await.map(|l| l.screen).unwrap_or_default();
                if let Err(error) = tmux.type_text(message).await {
                    return Reply::refused(format!("typing failed: {error}"));
                }
                tokio::time::sleep(TYPE_PAUSE).await;
                let after = tmux.look().await.map(|l| l.screen).unwrap_or_default();
                if after == before {
                    return Reply::refused(
                        "the typed text did not show on the agent's screen; Enter was not sent",
                    );
                }
                if let Err(error) = tmux.enter().await {
                    return Reply::refused(format!("sending Enter failed: {error}"));
                }
                self.dialogs_answered.starting = false;
                if self.tracker.observe(Observation::Typed, Timestamp::now()) {
                    self.report_due = true;
                }
                Reply::ok()
            }
        }
    }
}

/// Status times have whole seconds: `since` is rounded up, so an agent is never
/// judged idle for longer than it was.
fn ceil_to_second(t: Timestamp) -> Timestamp {
    let up = i64::from(t.subsec_nanosecond() > 0);
    Timestamp::from_second(t.as_second() + up).unwrap_or(t)
}

/// Waits until a freshly started TUI shows something.
async fn wait_for_screen(tmux: &tmux::Tmux) -> bool {
    for _ in 0..60 {
        if let Ok(look) = tmux.look().await
            && look.exited.is_none()
            && !look.screen.trim().is_empty()
        {
            tokio::time::sleep(Duration::from_millis(500)).await;
            return true;
        }
        tokio::time::sleep(POLL).await;
    }
    false
}

#[cfg(test)]
pub(crate) mod tests {
    use super::{DialogsAnswered, activity, dialog_showing, dialog_to_answer, first_prompt};
    use crate::agent::ActivityState;
    use crate::api::RuntimeName;
    use crate::runtimes;

    /// What the real CLIs showed or printed, captured against the model stand-in
    /// (tests/screens/: the CLI and its version name the folder).
    pub(crate) fn real_cli_fixture(path: &str) -> Vec<u8> {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/screens")
            .join(path);
        std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
    }

    fn screen(path: &str) -> String {
        String::from_utf8(real_cli_fixture(path)).expect("a screen is text")
    }

    #[test]
    fn the_real_clis_screens_through_the_shims_matcher() {
        // (runtime, screen, the first-run dialog the shim answers, judged waiting for a human)
        let rows = [
            (
                RuntimeName::Claude,
                "claude-2.1.332/trust-dialog.txt",
                Some("Is this a project you created or one you trust?"),
                false,
            ),
            (
                RuntimeName::Claude,
                "claude-2.1.332/api-key-dialog.txt",
                Some("Do you want to use this API key?"),
                false,
            ),
            (
                RuntimeName::Claude,
                "claude-2.1.332/bypass-permissions-dialog.txt",
                Some("Claude Code running in Bypass Permissions mode"),
                false,
            ),
            (RuntimeName::Claude, "claude-2.1.332/ready.txt", None, false),
            (
                RuntimeName::Claude,
                "claude-2.1.332/turn-ended-after-tool-call.txt",
                None,
                false,
            ),
            (
                RuntimeName::Claude,
                "claude-2.1.332/permission-prompt.txt",
                None,
                true,
            ),
            (
                RuntimeName::Codex,
                "codex-0.171.0/trust-dialog.txt",
                Some("Trust this folder?"),
                false,
            ),
            (RuntimeName::Codex, "codex-0.171.0/ready.txt", None, false),
            (
                RuntimeName::Codex,
                "codex-0.171.0/turn-ended-after-tool-call.txt",
                None,
                false,
            ),
            (
                RuntimeName::Codex,
                "codex-0.171.0/approval-prompt.txt",
                None,
                true,
            ),
            (
                RuntimeName::Copilot,
                "copilot-1.0.102/trust-dialog.txt",
                Some("Do you trust the files in this folder?"),
                false,
            ),
            (RuntimeName::Copilot, "copilot-1.0.102/ready.txt", None, false),
            (
                RuntimeName::Copilot,
                "copilot-1.0.102/turn-ended-after-tool-call.txt",
                None,
                false,
            ),
            (
                RuntimeName::Copilot,
                "copilot-1.0.102/permission-prompt.txt",
                None,
                true,
            ),
            (RuntimeName::Pi, "pi-0.73.1/ready.txt", None, false),
            (
                RuntimeName::Pi,
                "pi-0.73.1/turn-ended-after-tool-call.txt",
                None,
                false,
            ),
        ];
        for (name, path, dialog, waiting) in rows {
            let runtime = runtimes::lookup(name);
            let text = screen(path);
            let answered =
                dialog_showing(runtime, &text).map(|i| runtime.first_run_dialogs[i].pattern);
            assert_eq!(answered, dialog, "{path}");
            let now = jiff::Timestamp::now();
            let mut tracker = activity::Tracker::new(
                now,
                std::time::Duration::from_secs(5),
                runtime.waiting_patterns,
            );
            tracker.observe(
                activity::Observation::Output {
                    changed: true,
                    text: &text,
                },
                now,
            );
            assert_eq!(tracker.state == ActivityState::Waiting, waiting, "{path}");
        }
    }

    #[test]
    fn dialogs_are_answered_only_while_the_cli_starts_and_never_over_a_question() {
        let runtime = runtimes::lookup(RuntimeName::Claude);
        let trust = screen("claude-2.1.332/trust-dialog.txt");
        let permission = screen("claude-2.1.332/permission-prompt.txt");
        // The model's reply quotes a dialog under a permission prompt's question.
        let quoted_under_question = format!("{permission}\n{trust}");
        let tracker = activity::Tracker::new(
            jiff::Timestamp::now(),
            std::time::Duration::from_secs(5),
            runtime.waiting_patterns,
        );
        let now = tokio::time::Instant::now();
        let answered = |starting: bool, counts: u32, quiet: bool| DialogsAnswered {
            counts: vec![counts; runtime.first_run_dialogs.len()],
            quiet_until: quiet.then(|| now + std::time::Duration::from_secs(1)),
            starting,
        };
        // (screen, starting, answers so far, quiet, answered)
        let rows = [
            (&trust, true, 0, false, true),
            (&trust, false, 0, false, false),
            (&trust, true, 3, false, false),
            (&trust, true, 0, true, false),
            (&quoted_under_question, true, 0, false, false),
            (&permission, true, 0, false, false),
        ];
        for (screen, starting, counts, quiet, expected) in rows {
            let asks = tracker.asks_a_person(screen);
            let picked = dialog_to_answer(
                runtime,
                &answered(starting, counts, quiet),
                screen,
                asks,
                now,
            );
            assert_eq!(
                picked.is_some(),
                expected,
                "starting {starting}, {counts} answers, quiet {quiet}:\n{screen}"
            );
        }
    }

    #[test]
    fn unplaced_instructions_open_the_first_prompt() {
        let cases = [
            (None, None, None),
            (None, Some("  "), None),
            (None, Some("Map the code."), Some("Map the code.")),
            (Some("# Rules\n"), None, Some("# Rules")),
            (
                Some("# Rules\n"),
                Some("Map the code."),
                Some("# Rules\n\nMap the code."),
            ),
            (Some("\n"), Some("Map the code."), Some("Map the code.")),
        ];
        for (instructions, prompt, expected) in cases {
            assert_eq!(
                first_prompt(instructions, prompt).as_deref(),
                expected,
                "{instructions:?} + {prompt:?}"
            );
        }
    }
}
