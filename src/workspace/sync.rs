//! `overseer workspace sync`: the init container that puts the git source into the
//! workspace. A workspace that already holds a clone (a persistent one, from an
//! earlier pod or step) is kept as it is: the work in it is the point. Runs the
//! image's own `git`.

use std::path::Path;
use std::process::Command;

use crate::{Error, Result};

/// Where `overseer workspace credential` reads the Secret's keys from.
use super::CREDENTIALS_DIR;

/// Where the work starts when the remote lacks `OVERSEER_GIT_REF`.
pub const START_FALLBACK_ENV: &str = "OVERSEER_GIT_REF_FALLBACK";

/// What the init container is told, from its environment.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    pub url: String,
    /// Where the work starts (None: the remote's HEAD).
    pub start: Option<String>,
    /// Where it starts when the remote lacks `start` (a goal's branch before the first
    /// step of its own lands on it).
    pub fallback: Option<String>,
    /// The branch the work goes on.
    pub branch: String,
}

impl Source {
    pub fn from_env() -> Result<Source> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        Ok(Source {
            url: var("OVERSEER_GIT_URL")
                .ok_or_else(|| Error::Usage("OVERSEER_GIT_URL is not set".into()))?,
            start: var("OVERSEER_GIT_REF"),
            fallback: var(START_FALLBACK_ENV),
            branch: var("OVERSEER_GIT_BRANCH")
                .ok_or_else(|| Error::Usage("OVERSEER_GIT_BRANCH is not set".into()))?,
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
    init_clone(&dir, &source.url)?;
    // The branch from the remote when it has it; else a new one from the start.
    let from_branch = git(&dir, &fetch_args(&source.branch)).is_ok();
    if !from_branch {
        let start = source.start.as_deref().unwrap_or("HEAD");
        if let Err(error) = git(&dir, &fetch_args(start)) {
            let Some(fallback) = &source.fallback else {
                return Err(error);
            };
            git(&dir, &fetch_args(fallback))?;
        }
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

/// An empty repository in `dir` with `url` as its origin, and the credential helper
/// for it when the credentials Secret is mounted.
pub fn init_clone(dir: &Path, url: &str) -> Result<()> {
    git(dir, &["init", "--quiet"].map(String::from))?;
    git(dir, &["remote", "add", "origin", url].map(String::from))?;
    if Path::new(CREDENTIALS_DIR).exists()
        && let Some(origin) = https_origin(url)
    {
        // Scoped to the source's origin twice over: git asks the helper only for that
        // origin, and the helper answers nothing for any other (a submodule, or a push
        // the model was talked into, to a host of someone else's).
        let exe = std::env::current_exe()?;
        let helper = format!("!{} workspace credential --origin {origin}", exe.display());
        let key = format!("credential.{origin}.helper");
        git(dir, &["config", &key, &helper].map(String::from))?;
    }
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
        .map_err(|e| Error::Git(format!("running git: {e} (the agent image needs git)")))?;
    if output.status.success() {
        return Ok(());
    }
    Err(Error::Git(format!(
        "git {} failed: {}",
        args.first().map(String::as_str).unwrap_or_default(),
        String::from_utf8_lossy(&output.stderr).trim()
    )))
}

/// `https://HOST[:PORT]` of an https git URL; None for any other (ssh does not ask
/// credential helpers, and a URL of another form gets no token).
pub fn https_origin(url: &str) -> Option<String> {
    let uri: http::Uri = url.parse().ok()?;
    let authority = uri.authority()?;
    (uri.scheme_str() == Some("https") && !authority.as_str().contains('@'))
        .then(|| format!("https://{}", authority.as_str().to_ascii_lowercase()))
}

/// Whether git's credential request (`key=value` lines) is for `origin`: its protocol
/// and host (with the port, as git sends it) are the origin's.
fn asks_for(origin: &str, request: &str) -> bool {
    let field = |key: &str| {
        request
            .lines()
            .find_map(|line| line.strip_prefix(key)?.strip_prefix('='))
            .map(str::to_ascii_lowercase)
    };
    match (field("protocol"), field("host")) {
        (Some(protocol), Some(host)) => format!("{protocol}://{host}") == origin,
        _ => false,
    }
}

/// `overseer workspace credential --origin O get`: git's credential helper protocol,
/// answered from the mounted Secret (`username`, default `x-access-token`, and
/// `password`), and only for a request for origin `O`.
pub fn credential(origin: &str, operation: &str) -> Result<()> {
    if operation != "get" {
        return Ok(());
    }
    let mut request = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut request)?;
    if !asks_for(origin, &request) {
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

#[cfg(test)]
mod credential_tests {
    use super::*;

    #[test]
    fn the_token_is_for_the_sources_origin_only() {
        let origin = https_origin("https://GitHub.com/acme/widgets.git").unwrap();
        assert_eq!(origin, "https://github.com");
        assert_eq!(
            https_origin("https://git.example.com:8443/r.git").as_deref(),
            Some("https://git.example.com:8443")
        );
        for url in [
            "ssh://git@github.com/a/b.git",
            "git@github.com:a/b.git",
            "file:///repo",
            "https://u@h/r",
        ] {
            assert_eq!(https_origin(url), None, "{url}");
        }
        // (git's request, answered)
        let rows = [
            (
                "protocol=https\nhost=github.com\npath=acme/widgets.git\n",
                true,
            ),
            ("protocol=https\nhost=GITHUB.COM\n", true),
            ("protocol=https\nhost=evil.example\n", false),
            ("protocol=http\nhost=github.com\n", false),
            ("protocol=https\nhost=github.com:444\n", false),
            ("protocol=https\nhost=github.com.evil.example\n", false),
            ("host=github.com\n", false),
            ("", false),
        ];
        for (request, answered) in rows {
            assert_eq!(asks_for(&origin, request), answered, "{request:?}");
        }
    }
}
