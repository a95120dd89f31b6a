//! `overseer workspace sync`: the init container that puts the git source into the
//! workspace. A workspace that already holds a clone (a persistent one, from an
//! earlier pod or step) is kept as it is: the work in it is the point. Runs the
//! image's own `git`.

use std::path::Path;
use std::process::Command;

use crate::{Error, Result};

/// Where `overseer workspace credential` reads the Secret's keys from.
use super::CREDENTIALS_DIR;

/// What the init container is told, from its environment.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    pub url: String,
    /// Where the work starts (None: the remote's HEAD).
    pub start: Option<String>,
    /// The branch the work goes on.
    pub branch: String,
}

impl Source {
    pub fn from_env() -> Result<Source> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        Ok(Source {
            url: var("OVERSEER_GIT_URL")
                .ok_or_else(|| Error::Invalid("OVERSEER_GIT_URL is not set".into()))?,
            start: var("OVERSEER_GIT_REF"),
            branch: var("OVERSEER_GIT_BRANCH")
                .ok_or_else(|| Error::Invalid("OVERSEER_GIT_BRANCH is not set".into()))?,
        })
    }
}

/// Runs `overseer workspace sync` in the current directory: a clone of the source on
/// its branch, the branch itself when the remote has it (work pushed by an earlier
/// pod), else a new branch from the start. A directory that already holds a clone is
/// kept as it is.
pub fn run() -> Result<()> {
    let source = Source::from_env()?;
    let dir = std::env::current_dir()?;
    if dir.join(".git").exists() {
        println!("workspace: keeping the clone in {}", dir.display());
        return Ok(());
    }
    git(&dir, &["init", "--quiet"].map(String::from))?;
    git(
        &dir,
        &["remote", "add", "origin", &source.url].map(String::from),
    )?;
    if Path::new(CREDENTIALS_DIR).exists() {
        let exe = std::env::current_exe()?;
        let helper = format!("!{} workspace credential", exe.display());
        git(
            &dir,
            &["config", "credential.helper", &helper].map(String::from),
        )?;
    }
    // The branch from the remote when it has it; else a new one from the start.
    let from_branch = git(&dir, &fetch_args(&source.branch)).is_ok();
    if !from_branch {
        let start = source.start.as_deref().unwrap_or("HEAD");
        git(&dir, &fetch_args(start))?;
    }
    git(
        &dir,
        &["checkout", "--quiet", "-B", &source.branch, "FETCH_HEAD"].map(String::from),
    )?;
    println!(
        "workspace: {} on branch {} ({})",
        source.url,
        source.branch,
        if from_branch { "the remote's" } else { "new" }
    );
    Ok(())
}

fn fetch_args(what: &str) -> [String; 5] {
    ["fetch", "--quiet", "--no-tags", "origin", what].map(String::from)
}

/// Runs `git args` in `dir`; the error names the command and git's own words.
fn git(dir: &Path, args: &[String]) -> Result<()> {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        // The workspace may belong to another uid (a claim's fsGroup): it is ours.
        .env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "safe.directory")
        .env("GIT_CONFIG_VALUE_0", "*")
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .map_err(|e| Error::Invalid(format!("running git: {e} (the agent image needs git)")))?;
    if output.status.success() {
        return Ok(());
    }
    Err(Error::Invalid(format!(
        "git {} failed: {}",
        args.first().map(String::as_str).unwrap_or_default(),
        String::from_utf8_lossy(&output.stderr).trim()
    )))
}

/// `overseer workspace credential get`: git's credential helper protocol, answered
/// from the mounted Secret (`username`, default `x-access-token`, and `password`).
pub fn credential(operation: &str) -> Result<()> {
    if operation != "get" {
        return Ok(());
    }
    let read = |key: &str| {
        std::fs::read_to_string(Path::new(CREDENTIALS_DIR).join(key))
            .ok()
            .map(|v| v.trim().to_string())
    };
    let Some(password) = read("password") else {
        return Ok(());
    };
    let username = read("username").unwrap_or_else(|| "x-access-token".into());
    println!("username={username}\npassword={password}");
    Ok(())
}
