//! Shell completion: the scripts of `overseer completion SHELL`, and the answers
//! kubectl asks its plugins for (`kubectl overseer <TAB>`, kubectl 1.26 and later):
//! kubectl runs `kubectl_complete-overseer WORDS...`, which runs
//! `kubectl-overseer __complete -- WORDS...`, and reads back Cobra's format, one
//! candidate a line (`value<TAB>help`) and a last line `:DIRECTIVE`.

use std::time::Duration;

use clap::CommandFactory;
use clap_complete::CompletionCandidate;

use crate::cli::Cli;

/// Cobra's `ShellCompDirectiveNoFileComp`: offer no file names when nothing matches.
const NO_FILE_COMPLETION: u8 = 4;

/// How long completing an agent's name may wait for the API server: a tab key that
/// hangs is worse than one that offers nothing.
const LIST_DEADLINE: Duration = Duration::from_secs(3);

/// The completion script of `shell` for the name this program was run as.
pub fn print_script(shell: clap_complete::Shell) {
    let name = std::env::args()
        .next()
        .as_deref()
        .and_then(|arg0| {
            std::path::Path::new(arg0)
                .file_name()?
                .to_str()
                .map(String::from)
        })
        .unwrap_or_else(|| "overseer".into());
    clap_complete::generate(shell, &mut Cli::command(), name, &mut std::io::stdout());
}

/// The answer to kubectl for `words`, the command line after the plugin's name, of
/// which the last is the word being completed (empty after a space).
pub fn for_kubectl(words: &[String]) -> String {
    // The words typed so far may say where to look for agents, as they would for the
    // command itself.
    let typed = |long: &str, short: Option<&str>| flag_value(words, long, short);
    let _ = NAMESPACE.set(typed("--namespace", Some("-n")));
    crate::timeouts::KubeconfigChoice {
        kubeconfig: typed("--kubeconfig", None).map(Into::into),
        context: typed("--context", None),
    }
    .choose();
    let mut args: Vec<std::ffi::OsString> = vec!["kubectl-overseer".into()];
    args.extend(words.iter().map(Into::into));
    if words.is_empty() {
        args.push("".into());
    }
    let index = args.len() - 1;
    let candidates =
        clap_complete::engine::complete(&mut Cli::command(), args, index, None).unwrap_or_default();
    cobra_lines(&candidates)
}

/// The namespace typed on the command line being completed, if any.
static NAMESPACE: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();

/// The value of flag `long` (or `short`) among `words` before the last one, as
/// `--flag VALUE`, `--flag=VALUE` or `-f VALUE`.
fn flag_value(words: &[String], long: &str, short: Option<&str>) -> Option<String> {
    let typed = &words[..words.len().saturating_sub(1)];
    let mut found = None;
    for (i, word) in typed.iter().enumerate() {
        if word == long || Some(word.as_str()) == short {
            found = typed.get(i + 1).cloned();
        } else if let Some(value) = word.strip_prefix(long).and_then(|r| r.strip_prefix('=')) {
            found = Some(value.to_string());
        }
    }
    found
}

fn cobra_lines(candidates: &[CompletionCandidate]) -> String {
    let mut out = String::new();
    for candidate in candidates.iter().filter(|c| !c.is_hide_set()) {
        out.push_str(&candidate.get_value().to_string_lossy());
        if let Some(help) = candidate.get_help() {
            // Cobra reads only the first line of a description.
            let help = help.to_string();
            if let Some(first) = help.lines().next().filter(|l| !l.is_empty()) {
                out.push('\t');
                out.push_str(first);
            }
        }
        out.push('\n');
    }
    out.push_str(&format!(":{NO_FILE_COMPLETION}\n"));
    out
}

/// The Agents of the kubeconfig's namespace, for an AGENT argument; none when the
/// cluster cannot be asked within `LIST_DEADLINE`.
pub fn agent_names() -> Vec<CompletionCandidate> {
    // Completers are called synchronously from inside the CLI's runtime: the list runs
    // on a runtime of its own, on a thread of its own.
    let listed = std::thread::spawn(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        runtime.block_on(async {
            tokio::time::timeout(LIST_DEADLINE, list_agents())
                .await
                .ok()?
        })
    })
    .join();
    listed
        .ok()
        .flatten()
        .unwrap_or_default()
        .into_iter()
        .map(|(name, phase)| CompletionCandidate::new(name).help(Some(phase.into())))
        .collect()
}

async fn list_agents() -> Option<Vec<(String, String)>> {
    let client = crate::timeouts::client(LIST_DEADLINE).await.ok()?;
    let agents: kube::Api<crate::agent::Agent> = match NAMESPACE.get().cloned().flatten() {
        Some(namespace) => kube::Api::namespaced(client, &namespace),
        None => kube::Api::default_namespaced(client),
    };
    let list = agents.list(&Default::default()).await.ok()?;
    Some(
        list.items
            .into_iter()
            .filter_map(|agent| {
                let phase = agent
                    .status
                    .as_ref()
                    .and_then(|s| s.phase)
                    .map(crate::api::wire_name)
                    .unwrap_or_default();
                Some((agent.metadata.name?, phase))
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split(' ').map(String::from).collect()
    }

    #[test]
    fn kubectl_gets_subcommands_and_flags_in_cobras_format() {
        let top = for_kubectl(&words("p"));
        let lines: Vec<&str> = top.lines().collect();
        assert!(
            lines.contains(&"ps\tWhat is everyone working on: one line per agent"),
            "{top}"
        );
        assert!(lines.iter().any(|l| l.starts_with("peek\t")), "{top}");
        assert_eq!(lines.last(), Some(&":4"), "{top}");
        assert!(
            !top.contains("pane-run"),
            "hidden commands stay hidden: {top}"
        );

        let flags = for_kubectl(&words("ps --o"));
        assert!(
            flags.lines().any(|l| l.starts_with("--output\t")),
            "{flags}"
        );
        let values = for_kubectl(&words("ps -o "));
        for value in ["table", "wide", "json", "yaml"] {
            assert!(
                values.lines().any(|l| l.split('\t').next() == Some(value)),
                "{values}"
            );
        }
        assert_eq!(for_kubectl(&[]).lines().last(), Some(":4"));
    }

    #[test]
    fn flags_typed_before_the_word_are_read_and_the_word_itself_is_not() {
        let value = |line: &str| flag_value(&words(line), "--namespace", Some("-n"));
        assert_eq!(value("logs -n team "), Some("team".into()));
        assert_eq!(value("logs --namespace=team x"), Some("team".into()));
        assert_eq!(value("-n a logs --namespace b "), Some("b".into()));
        assert_eq!(value("logs -n"), None, "the value is still being typed");
        assert_eq!(value("logs --namespace"), None);
        assert_eq!(value("logs "), None);
    }
}
