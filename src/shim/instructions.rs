//! An agent's or step's composed instructions: linked into the working directory under
//! the runtime's file name, or, where they cannot be placed, opening the first prompt.

use std::path::PathBuf;

use tracing::{info, warn};

/// Links an agent's or step's composed instructions (for an agent a mounted ConfigMap,
/// updated in place) into the working directory under the runtime's file name.
/// Returns false when they cannot be placed there: the workspace has its own such file
/// (the repository's), or is read-only (a scout's).
pub(crate) fn link_instructions(source: &std::path::Path) -> bool {
    let Some(file) = source.file_name() else {
        return false;
    };
    let target = PathBuf::from(file);
    match std::fs::symlink_metadata(&target) {
        Ok(meta) if !meta.file_type().is_symlink() => {
            warn!(file = %target.display(), source = %source.display(), "the workspace has its own instruction file; it is left as it is");
            return false;
        }
        Ok(_) => {
            let _ = std::fs::remove_file(&target);
        }
        Err(_) => {}
    }
    match std::os::unix::fs::symlink(source, &target) {
        Ok(()) => {
            info!(file = %target.display(), "linked the instructions");
            true
        }
        Err(error) => {
            info!(%error, "instructions not linked (read-only workspace?)");
            false
        }
    }
}

/// The first prompt given to the CLI: the instructions that could not be placed
/// where it reads them, then the agent's own prompt.
pub(crate) fn first_prompt(
    unplaced_instructions: Option<&str>,
    prompt: Option<&str>,
) -> Option<String> {
    let parts: Vec<&str> = [unplaced_instructions, prompt]
        .into_iter()
        .flatten()
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

#[cfg(test)]
mod tests {
    use super::first_prompt;

    #[test]
    fn unplaced_instructions_open_the_first_prompt() {
        let cases = [
            (None, None, None),
            (None, Some("  "), None),
            (None, Some("Map the code."), Some("Map the code.")),
            (Some("# Rules\n"), None, Some("# Rules")),
            (
                Some("# Rules\n"),
                Some("Map the code."),
                Some("# Rules\n\nMap the code."),
            ),
            (Some("\n"), Some("Map the code."), Some("Map the code.")),
        ];
        for (instructions, prompt, expected) in cases {
            assert_eq!(
                first_prompt(instructions, prompt).as_deref(),
                expected,
                "{instructions:?} + {prompt:?}"
            );
        }
    }
}
