//! Shell completion as a person meets it: bash in a real terminal (tmux), the script
//! `overseer completion bash` printed sourced, and Tab completing a subcommand and a
//! flag of the kubectl conventions.

#[path = "support/mod.rs"]
mod support;

use std::process::Command;
use std::time::{Duration, Instant};

struct Terminal(String);

impl Terminal {
    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.0])
            .args(args)
            .output()
            .expect("tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The screen once it holds `text` (within 10 s).
    fn shows(&self, text: &str) -> String {
        let started = Instant::now();
        loop {
            let screen = self.tmux(&["capture-pane", "-p"]);
            if screen.contains(text) {
                return screen;
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "never showed {text:?}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
    }
}

#[test]
fn bash_completes_subcommands_and_kubectl_flags() {
    support::shim::tmux_present();
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_overseer"));
    let terminal = Terminal(format!("overseer-completion-{}", std::process::id()));
    terminal.tmux(&[
        "new-session",
        "-d",
        "-x",
        "150",
        "-y",
        "30",
        "bash --norc --noprofile",
    ]);
    let setup = format!(
        "PS1='$ '; PATH={}:$PATH; source <(overseer completion bash); echo ready",
        bin.parent().unwrap().display()
    );
    terminal.tmux(&["send-keys", &setup, "Enter"]);
    terminal.shows("\nready");
    terminal.tmux(&["send-keys", "overseer atta", "Tab"]);
    terminal.shows("$ overseer attach");
    terminal.tmux(&["send-keys", "C-u", "overseer ps --kubec", "Tab"]);
    terminal.shows("$ overseer ps --kubeconfig");
}
