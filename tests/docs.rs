//! The documentation's links lead somewhere: every relative link of every Markdown file
//! names a file of the repository, and every `#fragment` a heading of that file (as
//! GitHub makes anchors of headings).

use std::path::{Path, PathBuf};

fn markdown_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" && name != "node_modules" {
                markdown_files(&path, found);
            }
        } else if name.ends_with(".md") {
            found.push(path);
        }
    }
}

/// The targets of `[text](target)` links, code spans and blocks left out.
fn links(markdown: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut in_block = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block {
            continue;
        }
        // Code spans may hold `](` that is no link.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let end = rest.find(')').unwrap_or(rest.len());
            found.push(rest[..end].trim().to_string());
            rest = &rest[end..];
        }
    }
    found
}

/// GitHub's anchor of a heading: lower case, spaces as dashes, punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(markdown: &str) -> Vec<String> {
    let mut in_block = false;
    markdown
        .lines()
        .filter(|line| {
            if line.trim_start().starts_with("```") {
                in_block = !in_block;
            }
            !in_block
        })
        .filter_map(|line| line.strip_prefix('#'))
        .map(|heading| anchor(heading.trim_start_matches('#')))
        .collect()
}

#[test]
fn every_relative_link_and_anchor_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    markdown_files(root, &mut files);
    assert!(files.len() > 10, "found {files:?}");
    let mut broken = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for link in links(&text) {
            if link.contains("://") || link.starts_with("mailto:") || link.is_empty() {
                continue;
            }
            let (path, fragment) = link.split_once('#').unwrap_or((&link, ""));
            let target = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(path)
            };
            let shown = format!("{}: {link}", file.strip_prefix(root).unwrap().display());
            if !target.exists() {
                broken.push(format!("{shown} (no such file)"));
                continue;
            }
            if !fragment.is_empty() && target.extension().is_some_and(|e| e == "md") {
                let headings = anchors(&std::fs::read_to_string(&target).unwrap());
                if !headings.iter().any(|a| a == fragment) {
                    broken.push(format!("{shown} (no such heading)"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn anchors_are_githubs() {
    assert_eq!(anchor(" The Helm chart"), "the-helm-chart");
    assert_eq!(
        anchor("`overseer loop done|block|release|add`"),
        "overseer-loop-doneblockreleaseadd"
    );
    assert_eq!(anchor("Metrics"), "metrics");
}

/// The quoted strings of `text`, in order.
fn quoted(text: &str) -> Vec<String> {
    text.split('"')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, s)| s.to_string())
        .collect()
}

/// docs/gitops.md's table of what each tool sees is the cluster tests' `assert_readers`
/// calls, row for row, and its kstatus column is what kstatus answers for each Argo CD
/// health (as `support::health::kstatus_for` asserts on the live objects).
#[test]
fn the_gitops_table_is_what_the_cluster_tests_read() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/gitops.md")).unwrap();
    let table = doc
        .split("<!-- readers:begin -->")
        .nth(1)
        .and_then(|rest| rest.split("<!-- readers:end -->").next())
        .expect("docs/gitops.md has its readers table between the markers");
    let mut documented = Vec::new();
    for row in table.lines().filter(|l| l.starts_with('|')).skip(2) {
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        let [kind, state, argocd, kstatus] = cells[..] else {
            panic!("a row of four cells: {row}");
        };
        let expected = match argocd {
            "Healthy" => "Current",
            "Degraded" => "Failed",
            "Progressing" | "Suspended" => "InProgress",
            other => panic!("no Argo CD health {other:?}: {row}"),
        };
        assert_eq!(kstatus, expected, "{row}");
        documented.push(format!("{kind} | {state} | {argocd}"));
    }
    let mut tested = Vec::new();
    // The cluster tests' files, those of their folders (tests/cluster/goal/) too.
    let mut files = Vec::new();
    let mut folders = vec![root.join("tests/cluster")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else {
                files.push(path);
            }
        }
    }
    for path in files {
        let source = std::fs::read_to_string(path).unwrap();
        for call in source.split("assert_readers(").skip(1) {
            let args = quoted(call.split(");").next().unwrap());
            let (Some(kind), Some(state), Some(argocd)) = (args.first(), args.get(1), args.last())
            else {
                panic!("assert_readers with a kind, a state and a health: {call}");
            };
            tested.push(format!("{kind} | {state} | {argocd}"));
        }
    }
    documented.sort();
    tested.sort();
    assert!(
        !tested.is_empty(),
        "no assert_readers call found in tests/cluster"
    );
    assert_eq!(
        documented, tested,
        "docs/gitops.md's table and the cluster tests' reads"
    );
}
