//! The headless agent: one child process per run; its output is mirrored to the
//! shim's own output (the container log) and marks activity.

use std::io;
use std::process::Stdio;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

/// The output of the current run, as it arrives.
pub struct Headless {
    child: Option<Child>,
    output: mpsc::UnboundedReceiver<Vec<u8>>,
    sender: mpsc::UnboundedSender<Vec<u8>>,
    /// The last few KiB of output, where waiting-for-human prompts show.
    tail: String,
}

const TAIL_BYTES: usize = 4096;

impl Default for Headless {
    fn default() -> Headless {
        let (sender, output) = mpsc::unbounded_channel();
        Headless {
            child: None,
            output,
            sender,
            tail: String::new(),
        }
    }
}

impl Headless {
    /// Starts one run of `command`.
    pub fn start(&mut self, command: &[String]) -> io::Result<()> {
        let (program, args) = command
            .split_first()
            .ok_or_else(|| io::Error::other("no command to run"))?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| io::Error::new(e.kind(), format!("starting {program}: {e}")))?;
        for pipe in [
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let sender = self.sender.clone();
            tokio::spawn(mirror(pipe, sender));
        }
        self.child = Some(child);
        Ok(())
    }

    /// Whether a run is in progress.
    pub fn running(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    /// Output since the last look (None when there was none) and the exit status of
    /// the run once it ended.
    pub fn look(&mut self) -> (bool, &str, Option<i32>) {
        let mut changed = false;
        while let Ok(chunk) = self.output.try_recv() {
            changed = true;
            self.tail.push_str(&String::from_utf8_lossy(&chunk));
        }
        if self.tail.len() > TAIL_BYTES {
            let mut cut = self.tail.len() - TAIL_BYTES;
            while !self.tail.is_char_boundary(cut) {
                cut += 1;
            }
            self.tail.drain(..cut);
        }
        let exited = match self.child.as_mut().map(|c| c.try_wait()) {
            Some(Ok(Some(status))) => Some(status.code().unwrap_or(-1)),
            _ => None,
        };
        (changed, &self.tail, exited)
    }

    pub async fn kill(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill().await;
        }
    }
}

async fn mirror(
    mut pipe: Box<dyn tokio::io::AsyncRead + Unpin + Send>,
    sender: mpsc::UnboundedSender<Vec<u8>>,
) {
    let mut buffer = vec![0u8; 8192];
    let mut log = tokio::io::stdout();
    while let Ok(n) = pipe.read(&mut buffer).await {
        if n == 0 {
            break;
        }
        let _ = log.write_all(&buffer[..n]).await;
        if sender.send(buffer[..n].to_vec()).is_err() {
            break;
        }
    }
}
