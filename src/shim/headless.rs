//! The headless agent: one child process per run; its output is mirrored to the
//! shim's own output (the container log) and marks activity. When the runtime prints
//! JSON events, its stdout also feeds the usage meter.

use std::io;
use std::process::Stdio;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use super::usage::Meter;
use crate::agent::TokenUsage;
use crate::runtimes::UsageFormat;

/// What a mirroring task passes on.
enum Output {
    Chunk {
        stdout: bool,
        bytes: Vec<u8>,
    },
    /// The pipe of the run numbered `run` reached its end.
    Closed {
        run: u64,
    },
}

/// The output of the current run, as it arrives.
pub struct Headless {
    child: Option<Child>,
    output: mpsc::UnboundedReceiver<Output>,
    sender: mpsc::UnboundedSender<Output>,
    /// The last few KiB of output, where waiting-for-human prompts show.
    tail: String,
    /// The number of the current run; output of an earlier one still arriving is
    /// mirrored, but does not hold up the current run's end.
    run: u64,
    /// Pipes of the current run not yet at their end.
    open_pipes: usize,
    /// The current run's end has been given to the meter.
    run_closed: bool,
    meter: Option<Meter>,
}

/// One look at the current run.
pub struct Look {
    /// Output arrived since the last look.
    pub changed: bool,
    pub tail: String,
    /// The run's exit code, once it ended.
    pub exited: Option<i32>,
    /// The token usage changed since the last look.
    pub usage_changed: bool,
}

const TAIL_BYTES: usize = 4096;

impl Headless {
    /// A driver whose runs print `usage` (None: plain output, no usage read).
    pub fn new(usage: Option<UsageFormat>) -> Headless {
        let (sender, output) = mpsc::unbounded_channel();
        Headless {
            child: None,
            output,
            sender,
            tail: String::new(),
            run: 0,
            open_pipes: 0,
            run_closed: true,
            meter: usage.map(Meter::new),
        }
    }

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
        // A run still closing its pipes when the next starts: its end is counted now.
        self.close_run();
        self.run += 1;
        self.open_pipes = 0;
        self.run_closed = false;
        for (stdout, pipe) in [
            (
                true,
                child
                    .stdout
                    .take()
                    .map(|p| Box::new(p) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
            ),
            (
                false,
                child
                    .stderr
                    .take()
                    .map(|p| Box::new(p) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
            ),
        ] {
            let Some(pipe) = pipe else { continue };
            self.open_pipes += 1;
            tokio::spawn(mirror(pipe, self.run, stdout, self.sender.clone()));
        }
        self.child = Some(child);
        Ok(())
    }

    /// Whether a run is in progress.
    pub fn running(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    /// The token usage of this attempt's runs so far.
    pub fn usage(&self) -> Option<TokenUsage> {
        self.meter.as_ref().and_then(Meter::usage)
    }

    /// Output since the last look, and the exit status of the run once it ended.
    pub fn look(&mut self) -> Look {
        let mut changed = false;
        let mut usage_changed = false;
        while let Ok(message) = self.output.try_recv() {
            match message {
                Output::Chunk { stdout, bytes } => {
                    changed = true;
                    if stdout && let Some(meter) = self.meter.as_mut() {
                        usage_changed |= meter.feed(&bytes);
                    }
                    self.tail.push_str(&String::from_utf8_lossy(&bytes));
                }
                Output::Closed { run } if run == self.run => {
                    self.open_pipes = self.open_pipes.saturating_sub(1);
                }
                Output::Closed { .. } => {}
            }
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
        // The run is over once it exited and all its output has been read.
        if exited.is_some() && self.open_pipes == 0 {
            usage_changed |= self.close_run();
        }
        Look {
            changed,
            tail: self.tail.clone(),
            exited,
            usage_changed,
        }
    }

    /// Gives the current run's end to the meter, once; returns whether the usage changed.
    fn close_run(&mut self) -> bool {
        if std::mem::replace(&mut self.run_closed, true) {
            return false;
        }
        self.meter.as_mut().is_some_and(Meter::run_ended)
    }

    pub async fn kill(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill().await;
        }
    }
}

async fn mirror(
    mut pipe: Box<dyn tokio::io::AsyncRead + Unpin + Send>,
    run: u64,
    stdout: bool,
    sender: mpsc::UnboundedSender<Output>,
) {
    let mut buffer = vec![0u8; 8192];
    let mut log = tokio::io::stdout();
    while let Ok(n) = pipe.read(&mut buffer).await {
        if n == 0 {
            break;
        }
        let _ = log.write_all(&buffer[..n]).await;
        let chunk = Output::Chunk {
            stdout,
            bytes: buffer[..n].to_vec(),
        };
        if sender.send(chunk).is_err() {
            return;
        }
    }
    let _ = sender.send(Output::Closed { run });
}
