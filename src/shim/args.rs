//! The shim's flags (each also read from the environment the operator gives the pod),
//! and the settings read from them.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde_json::json;

use super::protocol;
use crate::api::{RuntimeMode, RuntimeName, pod_env};

#[derive(Args, Debug, Clone)]
pub struct ShimArgs {
    /// The Agent this pod runs (no status is reported without it).
    #[arg(long, env = pod_env::AGENT)]
    pub agent: Option<String>,
    /// Namespace of the Agent (default: the client's).
    /// Set from the global `-n/--namespace` (src/cli.rs).
    #[arg(skip)]
    pub namespace: Option<String>,
    /// The attempt (spawn id) this pod is.
    #[arg(long, env = pod_env::ATTEMPT, default_value_t = 1)]
    pub attempt: i64,
    /// Runtime name (claude, codex, pi, copilot, cursor, custom): its prompt patterns and resume flag.
    #[arg(long, env = pod_env::RUNTIME, default_value = "custom")]
    pub runtime: String,
    /// tui or headless.
    #[arg(long, env = pod_env::MODE, default_value = "tui")]
    pub mode: String,
    /// Heartbeat: a status report even when nothing changes, every this long or every
    /// 5 minutes, whichever is longer (`off`: none).
    #[arg(long, env = pod_env::INTERVAL, default_value = "15s")]
    pub interval: String,
    /// No output change for this long counts as idle.
    #[arg(long, env = "OVERSEER_QUIET", default_value = "5s")]
    pub quiet: String,
    /// The local socket `overseer input` and `overseer loop` talk to.
    #[arg(long, env = pod_env::INPUT_SOCKET, default_value = protocol::DEFAULT_SOCKET)]
    pub socket: PathBuf,
    /// The agent's first prompt (headless: the first run's; TUI: typed once it is ready).
    #[arg(long, env = pod_env::PROMPT)]
    pub prompt: Option<String>,
    /// The agent CLI.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

/// The shortest time between two heartbeats, status writes that change nothing (an
/// `--interval` of `off` writes none). Changes are written at once. One write per
/// `loop.interval` (15 s) was 667 status writes a second at 10,000 agents, each an
/// event for every watcher of Agents, to say what the kubelet already tells: the shim
/// is the container's main process, so a dead shim is an ended container
/// (docs/design-notes.md, "The shim's heartbeat").
const HEARTBEAT_FLOOR: Duration = Duration::from_secs(300);

/// The shim's flags, read: the runtime and mode, how long a still screen takes to
/// count as idle, and how often a report is sent when nothing changes.
pub(super) struct Settings {
    pub(super) runtime: RuntimeName,
    pub(super) mode: RuntimeMode,
    pub(super) quiet: Duration,
    pub(super) heartbeat_every: Option<Duration>,
}

impl Settings {
    pub(super) fn of(args: &ShimArgs) -> crate::Result<Settings> {
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
