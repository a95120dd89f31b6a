//! `overseer attach` as a person uses it: in a real terminal (a tmux pane on this
//! machine), a terminal in the agent's own tmux session in its real container; what
//! the person types reaches the agent CLI, and detaching (C-b d) leaves it running.

use std::process::Command;
use std::time::Duration;

use crate::release::{exec, read_in_pod};
use crate::support::cluster::{TestNamespace, kubeconfig_path, repo_root, wait_in};

/// A tmux server of the test's own, standing in for the person's terminal.
struct Terminal {
    socket: String,
}

impl Terminal {
    fn start(ns: &TestNamespace, command: &str) -> Terminal {
        let terminal = Terminal {
            socket: format!("overseer-e2e-attach-{}", ns.name),
        };
        let path = format!(
            "{}:{}",
            repo_root().join(".cluster/bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let status = Command::new("tmux")
            .args([
                "-L",
                &terminal.socket,
                "new-session",
                "-d",
                "-x",
                "160",
                "-y",
                "40",
            ])
            .args(["-e", &format!("PATH={path}"), "-e", "TERM=xterm-256color"])
            .arg(command)
            .status()
            .expect("tmux on this machine (hack/testenv/packages.sh installs it)");
        assert!(status.success(), "starting the person's terminal");
        terminal
    }

    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        let status = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys"])
            .args(keys)
            .status()
            .unwrap();
        assert!(status.success(), "send-keys {keys:?}");
    }

    async fn shows(&self, ns: &TestNamespace, what: &str, text: &str) -> String {
        wait_in(ns, what, Duration::from_secs(30), || async {
            let screen = self.screen();
            screen.contains(text).then_some(screen)
        })
        .await
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

/// Waits until `line`, typed by a person, shows in the fake agent CLI's log in `pod`.
async fn reaches_the_cli(ns: &TestNamespace, pod: &str, line: &str) {
    wait_in(
        ns,
        &format!("{line:?} reached the agent CLI"),
        Duration::from_secs(30),
        || async {
            read_in_pod(ns, pod, "/tmp/fake/fake.log")
                .contains(line)
                .then_some(())
        },
    )
    .await;
}

/// The agent's tmux session in `pod` still runs (`when`: after what).
fn assert_session_runs(ns: &TestNamespace, pod: &str, when: &str) {
    let alive = exec(
        ns,
        pod,
        &[
            "tmux",
            "-S",
            "/overseer/run/tmux.sock",
            "has-session",
            "-t",
            "agent",
        ],
    );
    assert!(
        alive.status.success(),
        "the agent's session {when}: {alive:?}"
    );
}

/// Attaches to the TUI agent `agent` (pod `pod`, at its prompt), types a line as a
/// person would, and detaches.
pub async fn attach_type_and_detach(ns: &TestNamespace, agent: &str, pod: &str) {
    let command = format!(
        "{} --kubeconfig {} attach {agent} -n {}; echo \"attach exited $?\"; sleep 600",
        env!("CARGO_BIN_EXE_overseer"),
        kubeconfig_path().display(),
        ns.name
    );
    let terminal = Terminal::start(ns, &command);
    // The agent's own screen, inside its tmux (whose status line names the session).
    let screen = terminal
        .shows(
            ns,
            "the agent's screen in the person's terminal",
            "thinking 3",
        )
        .await;
    assert!(
        screen.contains("[agent]"),
        "the agent's tmux session:\n{screen}"
    );
    terminal.keys(&["take over from here", "Enter"]);
    reaches_the_cli(ns, pod, "take over from here").await;
    terminal.keys(&["C-b", "d"]);
    let screen = terminal
        .shows(ns, "attach ended by the detach", "attach exited")
        .await;
    assert!(screen.contains("attach exited 0"), "{screen}");
    // Detaching left the agent's session running.
    assert_session_runs(ns, pod, "after the detach");
    println!(
        "e2e[{}]: attach showed {agent}'s screen, typed a line into it, detached",
        ns.name
    );
}

/// The console's attach page in a real browser, as a person with `pods/exec` uses it:
/// the agent's screen in the page's terminal, a line typed there reaches the agent CLI,
/// and closing the page leaves the agent's session running.
pub async fn attach_in_the_browser(ns: &TestNamespace, agent: &str, pod: &str) {
    use crate::support::browser::{Browser, Console, screenshot_path};
    let console = Console::start(ns, None).await;
    let browser = Browser::start().await;
    browser
        .goto(&format!("{}#/agent/{}/{agent}", console.url, ns.name))
        .await;
    browser
        .wait_for_text("Attach: a terminal in its session", Duration::from_secs(30))
        .await;
    browser
        .goto(&format!("{}attach#{}/{agent}", console.url, ns.name))
        .await;
    browser
        .wait_for_text("thinking", Duration::from_secs(30))
        .await;
    browser
        .send_keys(".xterm-helper-textarea", "typed in the browser\u{E007}")
        .await;
    reaches_the_cli(ns, pod, "typed in the browser").await;
    browser.screenshot(&screenshot_path("attach")).await;
    browser.goto("about:blank").await;
    drop(browser);
    assert_session_runs(ns, pod, "after the page closed");
    println!(
        "e2e[{}]: the console's attach page showed {agent}'s screen and took a typed line",
        ns.name
    );
}
