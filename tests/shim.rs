//! The in-pod supervisor with real tmux and real child processes: scripted fake
//! agent CLIs (tests/fake-agents/) drive every activity state, and `overseer input`
//! delivers (or honestly refuses) messages over the shim's local socket.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use overseer::agent::{Activity, ActivityState};
use overseer::shim::protocol::{Request, request};

fn tmux_present() {
    let found = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "tmux is needed by the shim tests: install it (`bash hack/testenv/packages.sh`) or run `make test`"
    );
}

struct Shim {
    child: Child,
    dir: PathBuf,
}

impl Shim {
    /// `overseer shim` running `script` (with `args`) under `runtime`/`mode`, idle after 1s of quiet.
    fn start(test: &str, mode: &str, runtime: &str, script: &str, env: &[(&str, &str)]) -> Shim {
        tmux_present();
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("target/test-shim")
            .join(format!("{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fake-agents")
            .join(script);
        let log = std::fs::File::create(dir.join("shim.log")).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_overseer"))
            .args([
                "shim",
                "--mode",
                mode,
                "--runtime",
                runtime,
                "--quiet",
                "1s",
                "--interval",
                "off",
            ])
            .arg("--socket")
            .arg(dir.join("input.sock"))
            .arg("--")
            .arg(script)
            .env_remove("OVERSEER_AGENT")
            .env("FAKE_LOG", dir.join("fake.log"))
            .envs(env.iter().copied())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start overseer shim");
        Shim { child, dir }
    }

    fn socket(&self) -> PathBuf {
        self.dir.join("input.sock")
    }

    /// What the fake agent recorded (its arguments and the lines it read).
    fn fake_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("fake.log")).unwrap_or_default()
    }

    async fn activity(&self) -> Option<Activity> {
        request(&self.socket(), &Request::Status, Duration::from_secs(5))
            .await
            .ok()?
            .activity
    }

    async fn wait_for(&self, state: ActivityState) -> Activity {
        let mut last = None;
        for _ in 0..150 {
            if let Some(activity) = self.activity().await {
                if activity.state == state {
                    return activity;
                }
                last = Some(activity);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "the shim never reported {state:?}; last: {last:?}\nshim log:\n{}",
            std::fs::read_to_string(self.dir.join("shim.log")).unwrap_or_default()
        );
    }

    /// `overseer input --bytes N` with `message` on stdin, as the operator's exec runs it.
    fn input(&self, message: &str) -> Output {
        input(&self.socket(), message)
    }
}

fn input(socket: &Path, message: &str) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_overseer"))
        .args(["input", "--bytes", &message.len().to_string()])
        .arg("--socket")
        .arg(socket)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Like kwok's exec, keep stdin open: the length frames the message.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(message.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    drop(stdin);
    output
}

impl Drop for Shim {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        for _ in 0..50 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(self.dir.join("tmux.sock"))
            .arg("kill-server")
            .output();
    }
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test]
async fn a_tui_agent_works_goes_idle_and_takes_typed_input_then_enter() {
    let shim = Shim::start("tui-idle", "tui", "custom", "tui-works-then-idles.sh", &[]);
    shim.wait_for(ActivityState::Working).await;
    let idle = shim.wait_for(ActivityState::Idle).await;
    assert!(
        idle.since <= idle.heartbeat_time,
        "idle since the output stopped"
    );

    let message = "overseer: continue with the failing test in src/lib.rs; run `overseer loop done` when finished";
    let delivered = shim.input(message);
    assert!(
        delivered.status.success(),
        "delivery refused: {}",
        stderr(&delivered)
    );
    // The line was submitted (Enter after the text): the agent read it whole.
    assert_eq!(shim.fake_log(), format!("{message}\n"));
    shim.wait_for(ActivityState::Working).await;
    shim.wait_for(ActivityState::Idle).await;
}

#[tokio::test]
async fn a_permission_prompt_is_waiting_not_idle() {
    let shim = Shim::start("tui-permission", "tui", "pi", "tui-permission.sh", &[]);
    let waiting = shim.wait_for(ActivityState::Waiting).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let later = shim.activity().await.unwrap();
    assert_eq!(
        later.state,
        ActivityState::Waiting,
        "quiet at a prompt stays waiting"
    );
    assert_eq!(later.since, waiting.since);
}

#[tokio::test]
async fn typing_that_never_shows_is_refused_and_enter_is_not_sent() {
    let shim = Shim::start("tui-no-echo", "tui", "custom", "tui-no-echo.sh", &[]);
    shim.wait_for(ActivityState::Idle).await;
    let refused = shim.input("keep going");
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("did not show"),
        "{}",
        stderr(&refused)
    );
}

#[tokio::test]
async fn an_exited_tui_reports_its_code_and_input_resumes_it() {
    let shim = Shim::start("tui-exits", "tui", "pi", "tui-exits.sh", &[]);
    let exited = shim.wait_for(ActivityState::Exited).await;
    assert_eq!(exited.exit_code, Some(4));
    let delivered = shim.input("continue where you stopped");
    assert!(delivered.status.success(), "{}", stderr(&delivered));
    assert_eq!(
        shim.fake_log(),
        "args: \nargs: --continue\ncontinue where you stopped\n",
        "restarted with the resume flag, then the message typed"
    );
    let activity = shim.activity().await.unwrap();
    assert_ne!(activity.state, ActivityState::Exited);
    assert_eq!(activity.exit_code, None);
}

#[tokio::test]
async fn a_headless_agent_that_exits_early_is_resumed_with_the_message_as_prompt() {
    let shim = Shim::start("headless", "headless", "pi", "headless-exits-early.sh", &[]);
    let exited = shim.wait_for(ActivityState::Exited).await;
    assert_eq!(exited.exit_code, Some(0));
    let delivered = shim.input("continue: the API docs are missing");
    assert!(delivered.status.success(), "{}", stderr(&delivered));
    shim.wait_for(ActivityState::Exited).await;
    assert_eq!(
        shim.fake_log(),
        "args: \nargs: --continue continue: the API docs are missing\n"
    );
}

#[tokio::test]
async fn input_during_a_headless_run_is_refused() {
    let shim = Shim::start(
        "headless-busy",
        "headless",
        "pi",
        "headless-exits-early.sh",
        &[("FAKE_RUN_SECONDS", "30")],
    );
    shim.wait_for(ActivityState::Working).await;
    let refused = shim.input("more");
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("a run is in progress"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(shim.fake_log(), "args: \n", "no second run");
}

#[tokio::test]
async fn input_without_a_shim_fails_with_the_reason() {
    let dir = std::env::temp_dir().join(format!("no-shim-{}", std::process::id()));
    let refused = input(&dir.join("input.sock"), "hello");
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("cannot reach the shim"),
        "{}",
        stderr(&refused)
    );
}

#[tokio::test]
async fn loop_done_without_an_agent_to_report_to_is_refused() {
    let shim = Shim::start(
        "loop-refused",
        "headless",
        "pi",
        "headless-exits-early.sh",
        &[],
    );
    shim.wait_for(ActivityState::Exited).await;
    let output = Command::new(env!("CARGO_BIN_EXE_overseer"))
        .args(["loop", "done", "--reason", "finished"])
        .arg("--socket")
        .arg(shim.socket())
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("OVERSEER_AGENT is not set"),
        "{}",
        stderr(&output)
    );
}
