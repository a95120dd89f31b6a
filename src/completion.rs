//! Shell completion: the scripts of `overseer completion SHELL`, and the answers
//! kubectl asks its plugins for (`kubectl overseer <TAB>`, kubectl 1.26 and later):
//! kubectl runs `kubectl_complete-overseer WORDS...`, which runs
//! `kubectl-overseer __complete -- WORDS...`, and reads back Cobra's format, one
//! candidate a line (`value<TAB>help`) and a last line `:DIRECTIVE`.

use std::time::Duration;

use clap_complete::CompletionCandidate;

/// Cobra's `ShellCompDirectiveNoFileComp`: offer no file names when nothing matches.
const NO_FILE_COMPLETION: u8 = 4;

/// How long completing an agent's name may wait for the API server: a tab key that
/// hangs is worse than one that offers nothing.
const LIST_DEADLINE: Duration = Duration::from_secs(3);

/// The completion script of `shell` for `command`, under the name this program was
/// run as.
pub fn print_script(shell: clap_complete::Shell, mut command: clap::Command) {
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
    clap_complete::generate(shell, &mut command, name, &mut std::io::stdout());
}

/// The answer to kubectl for `words` of `command`, the command line after the
/// plugin's name, of which the last is the word being completed (empty after a space).
pub fn for_kubectl(mut command: clap::Command, words: &[String]) -> String {
    // The words typed so far may say where to look for agents, as they would for the
    // command itself.
    let typed = |long: &str, short: Option<&str>| flag_value(words, long, short);
    let _ = NAMESPACE.set(typed("--namespace", Some("-n")));
    crate::kubernetes::timeouts::KubeconfigChoice {
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
        clap_complete::engine::complete(&mut command, args, index, None).unwrap_or_default();
    cobra_lines(&candidates)
}

/// The namespace typed on the command line being completed, if any.
static NAMESPACE: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();

/// The value of flag `long` (or `short`) among `words` before the last one, as
/// `--flag VALUE`, `--flag=VALUE` or `-f VALUE`.
pub fn flag_value(words: &[String], long: &str, short: Option<&str>) -> Option<String> {
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
    let client = crate::kubernetes::timeouts::client(LIST_DEADLINE)
        .await
        .ok()?;
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
