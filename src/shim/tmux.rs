//! The TUI agent inside a private tmux server: start it, look at its pane, type
//! into it, and respawn it when it exited.

use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// The tmux session the agent runs in (`overseer attach` joins it).
pub const TARGET: &str = "agent";
/// The tmux server's socket, in the directory of the shim's input socket.
pub const SOCKET_FILE: &str = "tmux.sock";

/// What one look at the pane shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Look {
    /// Exit status of the agent process, when it has ended.
    pub exited: Option<i32>,
    /// The visible screen.
    pub screen: String,
    /// Where the cursor is (column, row), when tmux said.
    pub cursor: Option<(usize, usize)>,
}

pub struct Tmux {
    socket: PathBuf,
    /// Where `overseer pane-run` records the agent's exit code.
    exit_file: PathBuf,
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
            socket: run_dir.join(SOCKET_FILE),
            exit_file: run_dir.join("agent.exit"),
        };
        let _ = tokio::fs::remove_file(&tmux.exit_file).await;
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
        args.extend(tmux.pane_command(command)?);
        tmux.run(&args, None).await?;
        Ok(tmux)
    }

    /// `command` wrapped in `overseer pane-run`, which records its exit code.
    fn pane_command(&self, command: &[String]) -> io::Result<Vec<String>> {
        let overseer = std::env::current_exe()?;
        let mut wrapped = vec![
            overseer.display().to_string(),
            "pane-run".into(),
            "--exit-file".into(),
            self.exit_file.display().to_string(),
            "--".into(),
        ];
        wrapped.extend(command.iter().cloned());
        Ok(wrapped)
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
            "#{cursor_x} #{cursor_y} #{pane_dead} #{pane_dead_status} #{pane_dead_signal}",
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
        let mut fields = head.splitn(3, ' ');
        let cursor = match (fields.next(), fields.next()) {
            (Some(x), Some(y)) => x.parse().ok().zip(y.parse().ok()),
            _ => None,
        };
        let head = fields.next().unwrap_or_default();
        let recorded = match head.starts_with('1') {
            true => tokio::fs::read_to_string(&self.exit_file).await.ok(),
            false => None,
        };
        Ok(Look {
            exited: exit_of(head, recorded.as_deref()),
            screen: screen.to_string(),
            cursor,
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
        self.key("Enter").await
    }

    /// Sends one key by its tmux name (`Enter`, `Down`, `2`).
    pub async fn key(&self, key: &str) -> io::Result<()> {
        self.run(&["send-keys", "-t", TARGET, key].map(String::from), None)
            .await
            .map(drop)
    }

    /// Starts `command` again in the pane of an exited agent.
    pub async fn respawn(&self, command: &[String]) -> io::Result<()> {
        let mut args: Vec<String> = ["respawn-pane", "-k", "-t", TARGET]
            .map(String::from)
            .to_vec();
        args.extend(self.pane_command(command)?);
        let _ = tokio::fs::remove_file(&self.exit_file).await;
        self.run(&args, None).await.map(drop)
    }

    pub async fn kill(&self) {
        let _ = self.run(&["kill-server".to_string()], None).await;
    }
}

/// The exit code of a dead pane: the one `pane-run` recorded, else tmux's
/// `"<dead> <status> <signal>"` (a signal as 128 + signal, as shells report it),
/// else -1 when neither knows (tmux 3.3 sometimes loses a quick exit's status).
fn exit_of(head: &str, recorded: Option<&str>) -> Option<i32> {
    let mut fields = head.split(' ').map(str::trim);
    if fields.next() != Some("1") {
        return None;
    }
    let status = fields.next().and_then(|s| s.parse::<i32>().ok());
    let signal = fields.next().and_then(|s| s.parse::<i32>().ok());
    let recorded = recorded.and_then(|r| r.trim().parse::<i32>().ok());
    Some(
        recorded
            .or(status)
            .or(signal.map(|signal| 128 + signal))
            .unwrap_or(-1),
    )
}

/// `overseer pane-run`: runs the agent CLI on the pane's terminal, waits for it
/// and writes its exit code to `exit_file` before ending with the same code. Like
/// a shell waiting for a foreground job, it outlives Ctrl-C and Ctrl-\ that the
/// agent receives as well, so the code is still recorded.
pub async fn run_in_pane(exit_file: &Path, command: &[String]) -> i32 {
    use tokio::signal::unix::{SignalKind, signal};
    let Some((program, args)) = command.split_first() else {
        return 2;
    };
    let code = match Command::new(program).args(args).spawn() {
        Ok(mut child) => {
            // Installed after the spawn, so the agent keeps the default actions.
            let _interrupt = signal(SignalKind::interrupt());
            let _quit = signal(SignalKind::quit());
            match child.wait().await {
                Ok(status) => exit_code(status),
                Err(error) => {
                    eprintln!("overseer: waiting for {program}: {error}");
                    -1
                }
            }
        }
        Err(error) => {
            eprintln!("overseer: starting {program}: {error}");
            127
        }
    };
    let partial = exit_file.with_extension("partial");
    let written = std::fs::write(&partial, code.to_string())
        .and_then(|()| std::fs::rename(&partial, exit_file));
    if let Err(error) = written {
        eprintln!("overseer: recording the exit code: {error}");
    }
    code
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or(status.signal().map(|signal| 128 + signal))
        .unwrap_or(-1)
}

#[cfg(test)]
mod tests {
    use super::exit_of;

    #[test]
    fn a_dead_pane_exit_code_comes_from_the_record_then_tmux() {
        for (head, recorded, expected) in [
            ("0  ", Some("4"), None),
            ("1 4 ", Some("4\n"), Some(4)),
            ("1  ", Some("3"), Some(3)),
            ("1 4 ", None, Some(4)),
            ("1 0 ", None, Some(0)),
            ("1  9", None, Some(137)),
            ("1  ", None, Some(-1)),
            ("1  ", Some("garbage"), Some(-1)),
            ("", None, None),
        ] {
            assert_eq!(exit_of(head, recorded), expected, "{head:?} {recorded:?}");
        }
    }
}
