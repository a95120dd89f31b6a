//! Shell completion as a person meets it: bash in a real terminal (tmux), the script
//! `overseer completion bash` printed sourced, and Tab completing a subcommand and a
//! flag of the kubectl conventions; and the answers kubectl's own completion asks of
//! the plugin, in Cobra's format (through real kubectl in tests/cluster/cli.rs).

#[path = "support/mod.rs"]
mod support;

use std::process::Command;

use clap::CommandFactory;
use overseer::cli::Cli;
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

fn words(line: &str) -> Vec<String> {
    line.split(' ').map(String::from).collect()
}

#[test]
fn kubectl_gets_subcommands_and_flags_in_cobras_format() {
    let top = overseer::completion::for_kubectl(Cli::command(), &words("p"));
    let lines: Vec<&str> = top.lines().collect();
    assert!(
        lines.contains(&"ps\tWhat is everyone working on: one line per agent"),
        "{top}"
    );
    assert!(lines.iter().any(|l| l.starts_with("peek\t")), "{top}");
    assert_eq!(lines.last(), Some(&":4"), "{top}");
    // The in-pod commands are hidden from people: from completion as from help.
    let everything = overseer::completion::for_kubectl(Cli::command(), &words(""));
    for hidden in [
        "pane-run",
        "shim",
        "step",
        "result",
        "install",
        "workspace",
        "input",
        "watch-pr",
    ] {
        assert!(
            !everything
                .lines()
                .any(|l| l.split('\t').next() == Some(hidden)),
            "{hidden} is hidden: {everything}"
        );
    }
    for shown in [
        "ps", "goals", "swarms", "version", "send", "logs", "attach", "loop",
    ] {
        assert!(
            everything
                .lines()
                .any(|l| l.split('\t').next() == Some(shown)),
            "{shown} is offered: {everything}"
        );
    }
    let loop_words = overseer::completion::for_kubectl(Cli::command(), &words("loop "));
    let offered: Vec<&str> = loop_words
        .lines()
        .filter_map(|l| l.split('\t').next())
        .filter(|w| !w.starts_with('-') && !w.starts_with(':'))
        .collect();
    assert_eq!(
        offered,
        ["release", "add", "remove", "help"],
        "{loop_words}"
    );
    assert!(!loop_words.contains("--socket"), "{loop_words}");

    let flags = overseer::completion::for_kubectl(Cli::command(), &words("ps --o"));
    assert!(
        flags.lines().any(|l| l.starts_with("--output\t")),
        "{flags}"
    );
    let values = overseer::completion::for_kubectl(Cli::command(), &words("ps -o "));
    for value in ["wide", "name", "json", "yaml", "jsonpath="] {
        assert!(
            values.lines().any(|l| l.split('\t').next() == Some(value)),
            "{values}"
        );
    }
    assert_eq!(
        overseer::completion::for_kubectl(Cli::command(), &[])
            .lines()
            .last(),
        Some(":4")
    );
}

#[test]
fn flags_typed_before_the_word_are_read_and_the_word_itself_is_not() {
    let value =
        |line: &str| overseer::completion::flag_value(&words(line), "--namespace", Some("-n"));
    assert_eq!(value("logs -n team "), Some("team".into()));
    assert_eq!(value("logs --namespace=team x"), Some("team".into()));
    assert_eq!(value("-n a logs --namespace b "), Some("b".into()));
    assert_eq!(value("logs -n"), None, "the value is still being typed");
    assert_eq!(value("logs --namespace"), None);
    assert_eq!(value("logs "), None);
}
