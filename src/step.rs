//! In the step pod: `overseer step -- CMD...` runs the agent's headless command and
//! writes the step's result to the container's termination message;
//! `overseer result` lets the agent set that result itself.
//!
//! The result is what the agent wrote with `overseer result` (stdin), or, when it
//! wrote none, the last 4 KiB of the run's output. Either way at most 4 KiB.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use crate::api::pod_env;
/// A step's result is at most this long (the termination message limit).
pub const MAX_RESULT_BYTES: usize = 4096;

/// Where the step pod finds the results of the earlier steps.
pub const RESULTS_FILE: &str = "/overseer/results/results.json";

/// Where `overseer result` leaves the result for `overseer step`.
pub fn result_file() -> PathBuf {
    std::env::var_os("OVERSEER_RESULT_FILE")
        .map(PathBuf::from)
        .unwrap_or_else(|| "/overseer/result".into())
}

/// Where Kubernetes reads the termination message.
pub fn termination_log() -> PathBuf {
    std::env::var_os("OVERSEER_TERMINATION_LOG")
        .map(PathBuf::from)
        .unwrap_or_else(|| "/dev/termination-log".into())
}

/// Writes the step's instructions (`OVERSEER_STEP_INSTRUCTIONS`) to
/// `OVERSEER_INSTRUCTIONS` and links them into the working directory (the workspace)
/// under the runtime's file name. Returns the instructions when they could not be
/// linked there (the workspace has its own such file, or is read-only): the operator's
/// instructions are never dropped for the repository's, so the caller puts them first
/// in the prompt instead.
fn place_instructions() -> std::io::Result<Option<String>> {
    let (Some(text), Some(path)) = (
        std::env::var_os("OVERSEER_STEP_INSTRUCTIONS"),
        std::env::var_os(pod_env::INSTRUCTIONS).map(PathBuf::from),
    ) else {
        return Ok(None);
    };
    let text = text.to_string_lossy().into_owned();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&path, &text)?;
    Ok((!crate::shim::link_instructions(&path)).then_some(text))
}

/// `command` with `instructions` put before the step's `action` in its prompt argument
/// (the argument that is the action itself); unchanged when there is none to place.
fn with_instructions_first(
    command: &[String],
    action: Option<&str>,
    instructions: Option<&str>,
) -> Vec<String> {
    let mut command = command.to_vec();
    if let (Some(action), Some(instructions)) = (action, instructions)
        && let Some(prompt) = command.iter_mut().rev().find(|arg| arg.as_str() == action)
    {
        *prompt = crate::shim::first_prompt(Some(instructions), Some(action)).unwrap_or_default();
    }
    command
}

/// Runs `command`, mirroring its output, and returns its exit code after writing the result.
pub async fn run(command: &[String]) -> std::io::Result<i32> {
    let unplaced = place_instructions().unwrap_or_else(|error| {
        eprintln!("overseer: the step's instructions were not placed: {error}");
        std::env::var("OVERSEER_STEP_INSTRUCTIONS").ok()
    });
    let action = std::env::var("OVERSEER_ACTION").ok();
    let command = with_instructions_first(command, action.as_deref(), unplaced.as_deref());
    let (program, args) = command
        .split_first()
        .ok_or_else(|| std::io::Error::other("no command given"))?;
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");
    let (tail_out, tail_err, status) = tokio::join!(
        mirror(stdout, tokio::io::stdout()),
        mirror(stderr, tokio::io::stderr()),
        child.wait()
    );
    let status = status?;
    let mut tail = tail_out?;
    if tail.is_empty() {
        tail = tail_err?;
    }
    let result = match tokio::fs::read(result_file()).await {
        Ok(own) => own,
        Err(_) => tail,
    };
    write_result(&termination_log(), &result).await?;
    Ok(status.code().unwrap_or(128))
}

/// Copies `input` to `output`, keeping the last `MAX_RESULT_BYTES` bytes.
async fn mirror<R, W>(mut input: R, mut output: W) -> std::io::Result<Vec<u8>>
where
    R: AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    let mut tail = Vec::new();
    let mut buffer = [0u8; 8192];
    loop {
        let n = input.read(&mut buffer).await?;
        if n == 0 {
            return Ok(tail);
        }
        output.write_all(&buffer[..n]).await?;
        output.flush().await?;
        tail.extend_from_slice(&buffer[..n]);
        if tail.len() > MAX_RESULT_BYTES {
            tail.drain(..tail.len() - MAX_RESULT_BYTES);
        }
    }
}

/// Writes at most the last `MAX_RESULT_BYTES` of `result`, cut at a UTF-8 boundary.
async fn write_result(path: &Path, result: &[u8]) -> std::io::Result<()> {
    let text = String::from_utf8_lossy(result);
    let mut start = text.len().saturating_sub(MAX_RESULT_BYTES);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    tokio::fs::write(path, text[start..].trim_end().as_bytes()).await
}

/// `overseer result`: stores stdin as the step's result.
pub async fn set_result() -> std::io::Result<()> {
    let mut input = Vec::new();
    tokio::io::stdin().read_to_end(&mut input).await?;
    write_result(&result_file(), &input).await
}

/// `overseer install DEST`: copies this binary to DEST (the init container's job, so
/// the agent image needs nothing of ours, not even `cp`).
pub fn install(dest: &Path) -> std::io::Result<()> {
    let me = std::env::current_exe()?;
    if let Some(dir) = dest.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::copy(me, dest)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `overseer step` logic with its files in a temporary directory.
    async fn run_in(dir: &Path, script: &str, own_result: Option<&str>) -> (i32, String) {
        // Safety of set_var: these tests run the step logic in one test at a time (serial by the mutex).
        let _guard = ENV.lock().await;
        unsafe {
            std::env::set_var("OVERSEER_RESULT_FILE", dir.join("result"));
            std::env::set_var("OVERSEER_TERMINATION_LOG", dir.join("termination-log"));
        }
        if let Some(own) = own_result {
            std::fs::write(dir.join("result"), own).unwrap();
        }
        let code = run(&["sh".into(), "-c".into(), script.into()])
            .await
            .unwrap();
        (
            code,
            std::fs::read_to_string(dir.join("termination-log")).unwrap(),
        )
    }

    static ENV: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("overseer-step-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[tokio::test]
    async fn the_output_tail_is_the_result_when_the_agent_sets_none() {
        let dir = temp_dir("tail");
        let (code, result) =
            run_in(&dir, "echo first; echo done: 3 files changed; exit 0", None).await;
        assert_eq!(code, 0);
        assert_eq!(result, "first\ndone: 3 files changed");
    }

    #[tokio::test]
    async fn the_agents_own_result_wins_and_the_exit_code_is_kept() {
        let dir = temp_dir("own");
        let (code, result) = run_in(&dir, "echo noise; exit 3", Some("{\"pr\": 42}")).await;
        assert_eq!(code, 3);
        assert_eq!(result, "{\"pr\": 42}");
    }

    #[tokio::test]
    async fn long_output_is_cut_to_the_last_4_kib() {
        let dir = temp_dir("long");
        let (_, result) = run_in(
            &dir,
            "i=0; while [ $i -lt 2000 ]; do echo line-$i; i=$((i+1)); done",
            None,
        )
        .await;
        assert!(result.len() <= MAX_RESULT_BYTES, "{}", result.len());
        assert!(result.ends_with("line-1999"));
    }
}
