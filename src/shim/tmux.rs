//! The TUI agent inside a private tmux server: start it, look at its pane, type
//! into it, and respawn it when it exited.

use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::io::AsyncWriteExt;
use tokio::process::Command;

const TARGET: &str = "agent";

/// What one look at the pane shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Look {
    /// Exit status of the agent process, when it has ended.
    pub exited: Option<i32>,
    /// The visible screen.
    pub screen: String,
}

pub struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    /// Starts a private tmux server (socket in `run_dir`) running `command` in a
    /// 200x50 pane that remains after the process exits, so its status can be read.
    pub async fn start(run_dir: &Path, command: &[String]) -> io::Result<Tmux> {
        let config = run_dir.join("tmux.conf");
        tokio::fs::write(
            &config,
            "set -g remain-on-exit on\nset -g history-limit 10000\n",
        )
        .await?;
        let tmux = Tmux {
            socket: run_dir.join("tmux.sock"),
        };
        let mut args: Vec<String> = vec![
            "-f".into(),
            config.display().to_string(),
            "new-session".into(),
            "-d".into(),
            "-s".into(),
            TARGET.into(),
            "-x".into(),
            "200".into(),
            "-y".into(),
            "50".into(),
            "--".into(),
        ];
        args.extend(command.iter().cloned());
        tmux.run(&args, None).await?;
        Ok(tmux)
    }

    async fn run(&self, args: &[String], stdin: Option<&[u8]>) -> io::Result<String> {
        let mut child = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| io::Error::new(e.kind(), format!("starting tmux: {e}")))?;
        if let (Some(data), Some(mut pipe)) = (stdin, child.stdin.take()) {
            pipe.write_all(data).await?;
        }
        let output = child.wait_with_output().await?;
        if !output.status.success() {
            return Err(io::Error::other(format!(
                "tmux {}: {}",
                args.first().map(String::as_str).unwrap_or_default(),
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// The pane's screen and whether its process ended (one tmux call).
    pub async fn look(&self) -> io::Result<Look> {
        let args: Vec<String> = [
            "display-message",
            "-p",
            "-t",
            TARGET,
            "#{pane_dead} #{pane_dead_status}",
            ";",
            "capture-pane",
            "-p",
            "-t",
            TARGET,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let out = self.run(&args, None).await?;
        let (head, screen) = out.split_once('\n').unwrap_or((out.as_str(), ""));
        let mut fields = head.split(' ');
        let dead = fields.next() == Some("1");
        let status = fields.next().and_then(|s| s.trim().parse().ok());
        Ok(Look {
            exited: dead.then(|| status.unwrap_or(-1)),
            screen: screen.to_string(),
        })
    }

    /// Pastes `text` into the pane (bracketed when the agent asked for it, so
    /// newlines do not submit early). Enter is a separate key: `enter`.
    pub async fn type_text(&self, text: &str) -> io::Result<()> {
        self.run(
            &[
                "load-buffer".into(),
                "-b".into(),
                "overseer".into(),
                "-".into(),
            ],
            Some(text.as_bytes()),
        )
        .await?;
        self.run(
            &["paste-buffer", "-p", "-d", "-b", "overseer", "-t", TARGET].map(String::from),
            None,
        )
        .await
        .map(drop)
    }

    pub async fn enter(&self) -> io::Result<()> {
        self.run(
            &["send-keys", "-t", TARGET, "Enter"].map(String::from),
            None,
        )
        .await
        .map(drop)
    }

    /// Starts `command` again in the pane of an exited agent.
    pub async fn respawn(&self, command: &[String]) -> io::Result<()> {
        let mut args: Vec<String> = ["respawn-pane", "-k", "-t", TARGET]
            .map(String::from)
            .to_vec();
        args.extend(command.iter().cloned());
        self.run(&args, None).await.map(drop)
    }

    pub async fn kill(&self) {
        let _ = self.run(&["kill-server".to_string()], None).await;
    }
}
