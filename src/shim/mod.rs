//! `overseer shim -- CMD...`: the in-pod supervisor. It runs the agent CLI (TUI
//! inside tmux, headless as a child), tracks what it is doing, reports that to the
//! Agent's status (field manager `overseer-shim`) on every change plus a heartbeat
//! (`HEARTBEAT_FLOOR`), and takes input and the agent's self-exit on a local socket.

pub mod activity;
mod args;
pub mod client;
mod deliver;
mod delivered;
mod dialogs;
pub mod headless;
mod instructions;
pub mod mirror;
pub mod protocol;
mod reporter;
mod resources;
pub mod seed;
mod server;
mod submit;
pub mod tmux;
pub mod usage;

use std::path::{Path, PathBuf};
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use tokio::net::UnixListener;
use tokio::sync::{mpsc, oneshot};
use tracing::{info, warn};

use crate::agent::{Activity, ActivityState, AgentExit};
use crate::api::{RuntimeMode, pod_env};
use crate::kinds::guard::GuardCounts;
use crate::runtimes;
use activity::{Observation, Tracker};
use args::Settings;
pub use args::ShimArgs;
use dialogs::{DialogsAnswered, answer_first_run_dialog};
pub(crate) use instructions::{first_prompt, link_instructions};
use protocol::{Reply, Request};
use reporter::Reporter;

/// How often the agent is looked at.
const POLL: Duration = Duration::from_millis(250);
/// How soon a failed status write is tried again.
const RETRY: Duration = Duration::from_secs(1);
/// Where a container sees its own cgroup.
const CGROUP_ROOT: &str = "/sys/fs/cgroup";
/// How long the first prompt waits for a TUI to show its ready pattern.
const READY_WAIT: Duration = Duration::from_secs(60);

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
    /// The TUI's first prompt, typed once the agent first sits idle (and says it is
    /// ready, when its runtime says how).
    pending_prompt: Option<String>,
    started: tokio::time::Instant,
    /// The pane as last seen, to tell a change.
    last_screen: Option<String>,
    /// What of the pane has been mirrored to the container log.
    mirror: mirror::Mirror,
    /// The delivery ids confirmed so far.
    delivered: delivered::Delivered,
    /// The agent's last `overseer loop progress`: its summary, and when.
    progress: Option<(String, Timestamp)>,
    /// The tool calls `overseer guard` blocked in this attempt.
    guarded: Option<GuardCounts>,
    /// The container's cgroup, read at each report.
    meter: resources::Meter,
    resources: Option<crate::kinds::agent::ResourceUse>,
    /// The first-run dialogs answered so far.
    dialogs_answered: DialogsAnswered,
    /// A message typed but not taken by the CLI (it ignored Enter), and where it showed:
    /// delivered again, it is submitted without being typed twice.
    left_in_box: Option<(String, submit::Anchor)>,
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
    let unplaced_instructions = std::env::var_os(pod_env::INSTRUCTIONS)
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
        started: tokio::time::Instant::now(),
        last_screen: None,
        mirror: mirror::Mirror::default(),
        delivered: delivered::Delivered::default(),
        progress: None,
        guarded: None,
        meter: resources::Meter::new(CGROUP_ROOT),
        resources: None,
        dialogs_answered: DialogsAnswered::new(runtime),
        left_in_box: None,
        args,
    };
    supervise(shim, listener, settings.heartbeat_every).await
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
    tokio::spawn(server::accept(listener, requests));
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

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
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
            guards: self.guarded.clone(),
            resources: self.resources.clone(),
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
        // Read with each report, never a report of its own: resources change always.
        self.resources = self.meter.read(Timestamp::now());
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
        // A TUI that says when it takes input gets its prompt then; one that never
        // says so gets it after READY_WAIT all the same.
        let ready = self.runtime.ready_pattern.is_none_or(|pattern| {
            self.last_screen
                .as_deref()
                .is_some_and(|screen| screen.contains(pattern))
        });
        if !ready && self.started.elapsed() < READY_WAIT {
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
            Request::Guarded { reason } => self.record_guarded(&reason).await,
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

    /// `overseer guard` blocked a call: counted, with its reason, in the next report
    /// (at once: a block is a change the overseer may be woken for).
    async fn record_guarded(&mut self, reason: &str) -> Reply {
        let counts = self.guarded.get_or_insert_with(GuardCounts::default);
        counts.blocked += 1;
        counts.last_reason = protocol::one_line(reason, 256);
        counts.last_time = Some(Time(Timestamp::now()));
        self.report().await;
        Reply::ok()
    }
}

/// Status times have whole seconds: `since` is rounded up, so an agent is never
/// judged idle for longer than it was.
fn ceil_to_second(t: Timestamp) -> Timestamp {
    let up = i64::from(t.subsec_nanosecond() > 0);
    Timestamp::from_second(t.as_second() + up).unwrap_or(t)
}

#[cfg(test)]
pub(crate) mod tests {
    /// What the real CLIs showed or printed, captured against the model stand-in
    /// (tests/screens/: the CLI and its version name the folder).
    pub(crate) fn real_cli_fixture(path: &str) -> Vec<u8> {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/screens")
            .join(path);
        std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
    }
}
