//! `overseer step` with a real child process: the step's instructions are placed in
//! its workspace under the runtime's file name; where the repository has its own, they
//! come first in the prompt instead, and are never dropped for the repository's.

use std::path::{Path, PathBuf};
use std::process::Command;

fn fresh(name: &str) -> PathBuf {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("step-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("workspace")).unwrap();
    dir
}

const ACTION: &str = "Review the billing module";

/// Runs a step whose agent prints its prompt (the argument after `sh -c SCRIPT arg0`),
/// then the instruction file of its workspace; its result.
fn step_reading_its_instructions(dir: &Path) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_overseer"))
        .args([
            "step",
            "--",
            "sh",
            "-c",
            "printf '%s\\n---\\n' \"$1\"; cat CLAUDE.md",
            "agent",
            ACTION,
        ])
        .env("OVERSEER_ACTION", ACTION)
        .current_dir(dir.join("workspace"))
        .env(
            "OVERSEER_STEP_INSTRUCTIONS",
            "## Role: reviewer\n\nReport every problem as path:line.\n",
        )
        .env(
            "OVERSEER_INSTRUCTIONS",
            dir.join("overseer/instructions/CLAUDE.md"),
        )
        .env("OVERSEER_TERMINATION_LOG", dir.join("termination-log"))
        .env("OVERSEER_RESULT_FILE", dir.join("result"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    std::fs::read_to_string(dir.join("termination-log")).unwrap()
}

#[test]
fn a_step_reads_its_role_instructions_from_its_workspace() {
    let dir = fresh("placed");
    let result = step_reading_its_instructions(&dir);
    let (prompt, file) = result.split_once("---\n").unwrap();
    assert_eq!(
        prompt.trim(),
        ACTION,
        "linked: the prompt is the action alone"
    );
    assert!(
        file.contains("Report every problem as path:line."),
        "{result}"
    );

    let own = fresh("own");
    std::fs::write(own.join("workspace/CLAUDE.md"), "the repository's own\n").unwrap();
    let result = step_reading_its_instructions(&own);
    let (prompt, file) = result.split_once("---\n").unwrap();
    assert_eq!(
        file.trim(),
        "the repository's own",
        "a repository's own file is left alone"
    );
    assert!(
        prompt.starts_with("## Role: reviewer\n\nReport every problem as path:line."),
        "the operator's instructions come first: {prompt}"
    );
    assert!(
        prompt.trim_end().ends_with(ACTION),
        "then the action: {prompt}"
    );
}
