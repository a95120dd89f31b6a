//! The first-run state an agent CLI needs before its TUI takes a prompt unattended,
//! written into the CLI's home before the shim starts it (the registry's `seed`).
//! Found on the real CLIs (tests/screens/): Claude Code 2.1 without
//! `hasCompletedOnboarding` opens on a screen that tries to reach the vendor's service
//! and stops; its folder-trust, API-key and bypass-mode dialogs default to the refusal.
//! Seeding is the quiet path; the registry's dialogs stay as the fallback for a home
//! the seed could not write.
//!
//! What the user's image or volume already holds is kept: values are added, never
//! removed, and a file that does not parse is left as it is.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tracing::{info, warn};

use crate::runtimes::{Runtime, Seed};

/// How many trailing characters of an API key Claude Code records as approved.
const APPROVED_KEY_SUFFIX: usize = 20;

/// `~/.claude.json` with onboarding done, `cwd` trusted and `api_key` approved, merged
/// into what was there.
pub fn claude_state(existing: Value, cwd: &str, api_key: Option<&str>) -> Value {
    let mut state = match existing {
        Value::Object(_) => existing,
        _ => json!({}),
    };
    state["hasCompletedOnboarding"] = json!(true);
    if !state["projects"].is_object() {
        state["projects"] = json!({});
    }
    if !state["projects"][cwd].is_object() {
        state["projects"][cwd] = json!({});
    }
    state["projects"][cwd]["hasTrustDialogAccepted"] = json!(true);
    if let Some(key) = api_key.filter(|k| !k.is_empty()) {
        let chars: Vec<char> = key.chars().collect();
        let suffix: String = chars[chars.len().saturating_sub(APPROVED_KEY_SUFFIX)..]
            .iter()
            .collect();
        let responses = &mut state["customApiKeyResponses"];
        if !responses.is_object() {
            *responses = json!({"approved": [], "rejected": []});
        }
        if !responses["approved"].is_array() {
            responses["approved"] = json!([]);
        }
        let approved = responses["approved"].as_array_mut().expect("an array");
        if !approved.iter().any(|a| a == suffix.as_str()) {
            approved.push(json!(suffix));
        }
    }
    state
}

/// `~/.claude/settings.json` with the bypass mode's warning accepted.
pub fn claude_settings(existing: Value) -> Value {
    let mut settings = match existing {
        Value::Object(_) => existing,
        _ => json!({}),
    };
    settings["skipDangerousModePermissionPrompt"] = json!(true);
    settings
}

/// codex's `config.toml` with `cwd` trusted, or None when it already says so.
pub fn codex_config(existing: &str, cwd: &str) -> Option<String> {
    let quoted = cwd.replace('\\', "\\\\").replace('"', "\\\"");
    let table = format!("[projects.\"{quoted}\"]");
    if existing.lines().any(|line| line.trim() == table) {
        return None;
    }
    let mut config = existing.to_string();
    if !config.is_empty() && !config.ends_with('\n') {
        config.push('\n');
    }
    config.push_str(&format!("\n{table}\ntrust_level = \"trusted\"\n"));
    Some(config)
}

/// Copilot's `~/.copilot/config.json` with `cwd` among its `trustedFolders`, merged
/// into what was there.
pub fn copilot_config(existing: Value, cwd: &str) -> Value {
    let mut config = match existing {
        Value::Object(_) => existing,
        _ => json!({}),
    };
    if !config["trustedFolders"].is_array() {
        config["trustedFolders"] = json!([]);
    }
    let trusted = config["trustedFolders"].as_array_mut().expect("an array");
    if !trusted.iter().any(|t| t == cwd) {
        trusted.push(json!(cwd));
    }
    config
}

/// Writes `runtime`'s first-run state for the CLI `command` starting in the current
/// directory. Failures are logged: the dialogs are then answered on screen.
pub fn seed(runtime: &Runtime, command: &[String]) {
    let (Some(home), Ok(cwd)) = (std::env::var_os("HOME"), std::env::current_dir()) else {
        return;
    };
    let home = PathBuf::from(home);
    let cwd = cwd.display().to_string();
    let written = match runtime.seed {
        Seed::None => return,
        Seed::Claude => {
            let key = std::env::var("ANTHROPIC_API_KEY").ok();
            // The bypass warning shows when the command holds the autonomy flags.
            let bypass = !runtime.autonomy_flags.is_empty()
                && runtime
                    .autonomy_flags
                    .iter()
                    .all(|f| command.iter().any(|a| a == f));
            merge_json(&home.join(".claude.json"), |state| {
                claude_state(state, &cwd, key.as_deref())
            })
            .and_then(|()| match bypass {
                true => merge_json(&home.join(".claude/settings.json"), claude_settings),
                false => Ok(()),
            })
        }
        Seed::Codex => {
            let dir = std::env::var_os("CODEX_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| home.join(".codex"));
            let path = dir.join("config.toml");
            let existing = std::fs::read_to_string(&path).unwrap_or_default();
            match codex_config(&existing, &cwd) {
                Some(config) => write(&path, config.as_bytes()),
                None => Ok(()),
            }
        }
        Seed::Copilot => merge_json(&home.join(".copilot/config.json"), |config| {
            copilot_config(config, &cwd)
        }),
    };
    match written {
        Ok(()) => info!(runtime = ?runtime.name, "seeded the CLI's first-run state"),
        Err(error) => {
            warn!(%error, "the CLI's first-run state was not seeded; its dialogs are answered on screen")
        }
    }
}

/// Reads `path` as JSON (missing: `{}`), applies `change`, writes it back. Whole lines
/// of `//` comments, which Copilot heads its config with, are read past (a JSON string
/// cannot span lines, so no value is lost); a file that still does not parse is the
/// user's and is left alone.
fn merge_json(path: &Path, change: impl FnOnce(Value) -> Value) -> std::io::Result<()> {
    let existing = match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&without_comment_lines(&text)).map_err(|error| {
            std::io::Error::other(format!("{} does not parse: {error}", path.display()))
        })?,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => json!({}),
        Err(error) => return Err(error),
    };
    let merged = change(existing);
    write(path, serde_json::to_string_pretty(&merged)?.as_bytes())
}

fn without_comment_lines(text: &str) -> String {
    text.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_state_adds_to_what_the_user_has() {
        let existing = json!({
            "theme": "light",
            "projects": {"/other": {"hasTrustDialogAccepted": false}},
            "customApiKeyResponses": {"approved": ["abc"], "rejected": ["zzz"]},
        });
        let state = claude_state(
            existing,
            "/workspace",
            Some("sk-ant-0123456789abcdefghijKLMN"),
        );
        assert_eq!(
            state,
            json!({
                "theme": "light",
                "hasCompletedOnboarding": true,
                "projects": {
                    "/other": {"hasTrustDialogAccepted": false},
                    "/workspace": {"hasTrustDialogAccepted": true},
                },
                "customApiKeyResponses": {
                    "approved": ["abc", "456789abcdefghijKLMN"],
                    "rejected": ["zzz"],
                },
            })
        );
        // Seeding twice changes nothing more.
        assert_eq!(
            claude_state(
                state.clone(),
                "/workspace",
                Some("sk-ant-0123456789abcdefghijKLMN")
            ),
            state
        );
    }

    #[test]
    fn claude_state_without_a_key_approves_none() {
        let rows = [(None, json!(null)), (Some(""), json!(null))];
        for (key, responses) in rows {
            let state = claude_state(json!("not an object"), "/w", key);
            assert_eq!(state["customApiKeyResponses"], responses, "{key:?}");
            assert_eq!(state["hasCompletedOnboarding"], true);
            assert_eq!(state["projects"]["/w"]["hasTrustDialogAccepted"], true);
        }
    }

    #[test]
    fn claude_settings_keep_the_users_own() {
        assert_eq!(
            claude_settings(json!({"model": "opus"})),
            json!({"model": "opus", "skipDangerousModePermissionPrompt": true})
        );
    }

    #[test]
    fn codex_trust_is_appended_once() {
        let provider = "model_provider = \"standin\"";
        let seeded = codex_config(provider, "/workspace").unwrap();
        assert_eq!(
            seeded,
            "model_provider = \"standin\"\n\n[projects.\"/workspace\"]\ntrust_level = \"trusted\"\n"
        );
        assert_eq!(codex_config(&seeded, "/workspace"), None);
        assert_eq!(
            codex_config("", "/a \"b\"").unwrap(),
            "\n[projects.\"/a \\\"b\\\"\"]\ntrust_level = \"trusted\"\n"
        );
    }

    #[test]
    fn copilot_trust_is_added_once_and_its_comment_lines_read_past() {
        // Copilot 1.0.102's own file (tests/screens/copilot-1.0.102), after one trust.
        let written = "// User settings belong in settings.json.\n// This file is managed automatically.\n{\n  \"firstLaunchAt\": \"2026-12-06T17:12:41.959Z\",\n  \"trustedFolders\": [\"/other\"]\n}\n";
        let existing: Value = serde_json::from_str(&without_comment_lines(written)).unwrap();
        let seeded = copilot_config(existing, "/workspace");
        assert_eq!(
            seeded,
            json!({"firstLaunchAt": "2026-12-06T17:12:41.959Z",
                   "trustedFolders": ["/other", "/workspace"]})
        );
        assert_eq!(copilot_config(seeded.clone(), "/workspace"), seeded);
        assert_eq!(
            copilot_config(json!({"trustedFolders": "odd"}), "/w"),
            json!({"trustedFolders": ["/w"]})
        );
    }
}
