//! The source files import each other without cycles, and so do the folders: the
//! kinds layer (src/kinds: the four kinds' types) imports no controller and no kind
//! folder, the shared layers (controller.rs, labels.rs, reasons.rs, roles.rs, ...)
//! never import a kind's controller or the operator, and between two folders imports
//! go one way only. A cycle here is how a shape erodes (operator.rs and the four
//! controllers once imported each other; the kind folders once imported each other
//! both ways), so it fails the build.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module path (`agent::controller::delivery`) → the file's source, tests left out.
fn modules() -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    collect(Path::new("src"), &mut found);
    found
}

fn collect(dir: &Path, found: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).expect("reading src") {
        let path = entry.expect("reading src").path();
        if path.is_dir() {
            collect(&path, found);
            continue;
        }
        let name = path.to_string_lossy().into_owned();
        if !name.ends_with(".rs") || name.ends_with("_tests.rs") || name.contains("/bin/") {
            continue;
        }
        let module = name
            .trim_start_matches("src/")
            .trim_end_matches(".rs")
            .trim_end_matches("/mod")
            .replace('/', "::");
        let source = std::fs::read_to_string(&path).expect("reading a source file");
        let without_tests = match source.find("#[cfg(test)]\nmod tests {") {
            Some(at) => source[..at].to_string(),
            None => source,
        };
        found.insert(module, without_tests);
    }
}

/// Every path the source names from `crate::`, `super::` or one of its own child
/// modules (`use child::Item`), groups expanded, made absolute (`a::b::c`).
fn named_paths(module: &str, is_mod_rs: bool, source: &str, children: &[String]) -> Vec<String> {
    let parent: Vec<&str> = {
        let mut parts: Vec<&str> = module.split("::").collect();
        if !is_mod_rs {
            parts.pop();
        }
        parts
    };
    let own: Vec<&str> = if module == "lib" {
        Vec::new()
    } else {
        module.split("::").collect()
    };
    let mut prefixes: Vec<(String, Vec<&str>)> =
        vec![("crate::".into(), Vec::new()), ("super::".into(), parent)];
    for child in children {
        let mut base = own.clone();
        base.push(child);
        prefixes.push((format!("use {child}::"), base));
    }
    let mut paths = Vec::new();
    for (prefix, base) in prefixes {
        let prefix = prefix.as_str();
        let mut rest = source;
        while let Some(at) = rest.find(prefix) {
            let before = rest[..at].chars().last();
            rest = &rest[at + prefix.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            expand(&base.join("::"), rest, &mut paths);
        }
    }
    paths
}

/// Expands the path that starts `text` under `base`: `a::b`, or `a::{b, c::d}`.
fn expand(base: &str, text: &str, out: &mut Vec<String>) {
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(text.len());
    let path = text[..end].trim_end_matches(':');
    let joined = [base, path]
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("::");
    if text[end..].starts_with('{') {
        let group = &text[end + 1..];
        let close = group.find('}').unwrap_or(group.len());
        for item in group[..close].split(',') {
            expand(&joined, item.trim(), out);
        }
    } else {
        out.push(joined);
    }
}

/// The module a path lands in: its longest prefix that is a module. An item of a
/// kind's folder (`crate::agent::Agent`) is its type in the kinds layer, which the
/// folder's `mod.rs` re-exports.
fn resolve(path: &str, modules: &BTreeMap<String, String>) -> Option<String> {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len()).rev().find_map(|n| {
        let candidate = parts[..n].join("::");
        if !modules.contains_key(&candidate) {
            return None;
        }
        let kind = format!("kinds::{candidate}");
        let names_an_item = n < parts.len() && parts[n] != "self";
        Some(if names_an_item && modules.contains_key(&kind) {
            kind
        } else {
            candidate
        })
    })
}

fn import_graph() -> BTreeMap<String, BTreeSet<String>> {
    let modules = modules();
    let mut graph = BTreeMap::new();
    for (module, source) in &modules {
        let is_mod_rs = Path::new(&format!("src/{}/mod.rs", module.replace("::", "/"))).exists()
            || module == "lib";
        let children: Vec<String> = modules
            .keys()
            .filter_map(|m| {
                let rest = if module == "lib" {
                    Some(m.as_str())
                } else {
                    m.strip_prefix(&format!("{module}::"))
                }?;
                (!rest.contains("::")).then(|| rest.to_string())
            })
            .collect();
        let imports: BTreeSet<String> = named_paths(module, is_mod_rs, source, &children)
            .iter()
            .filter_map(|p| resolve(p, &modules))
            .filter(|target| target != module)
            .collect();
        graph.insert(module.clone(), imports);
    }
    graph
}

/// A cycle through `start`, if there is one: the modules along it.
fn cycle_through(start: &str, graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    let mut stack = vec![vec![start.to_string()]];
    let mut seen = BTreeSet::new();
    while let Some(path) = stack.pop() {
        let last = path.last().expect("a path is never empty");
        for next in graph.get(last).into_iter().flatten() {
            if next == start {
                let mut cycle = path.clone();
                cycle.push(next.clone());
                return Some(cycle);
            }
            if seen.insert(next.clone()) {
                let mut longer = path.clone();
                longer.push(next.clone());
                stack.push(longer);
            }
        }
    }
    None
}

#[test]
fn no_source_file_imports_one_that_imports_it_back() {
    let graph = import_graph();
    assert!(
        graph.len() > 40 && graph["cli"].contains("operator"),
        "the graph was not read: {graph:?}"
    );
    let cycles: Vec<String> = graph
        .keys()
        .filter(|m| m.as_str() != "lib")
        .filter_map(|m| cycle_through(m, &graph))
        .map(|cycle| cycle.join(" -> "))
        .collect();
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn the_shared_layers_never_import_a_controller_or_the_operator() {
    let graph = import_graph();
    for shared in ["controller", "labels", "reasons", "conditions", "api"] {
        let imports = &graph[shared];
        let upward: Vec<&String> = imports
            .iter()
            .filter(|m| m.ends_with("::controller") || *m == "operator" || *m == "cli")
            .collect();
        assert!(upward.is_empty(), "{shared} imports {upward:?}");
    }
}

#[test]
fn paths_are_read_as_the_compiler_reads_them() {
    let mut paths = Vec::new();
    expand("", "agent::{self, pod::CONTAINER, Agent};", &mut paths);
    assert_eq!(
        paths,
        ["agent::self", "agent::pod::CONTAINER", "agent::Agent"]
    );
    let source = "use super::{AgentContext, publish};\nlet x = crate::duration::parse(y);";
    assert_eq!(
        named_paths("agent::controller::delivery", false, source, &[]),
        [
            "duration::parse",
            "agent::controller::AgentContext",
            "agent::controller::publish"
        ]
    );
    // A mod.rs names its children without `self::`.
    let source = "use pod::CONTAINER;\nuse podcast::X;";
    assert_eq!(
        named_paths("agent", true, source, &["pod".to_string()]),
        ["agent::pod::CONTAINER"]
    );
}

/// The folder (or top-level file) a module is in: `agent::controller::delivery` is in
/// `agent`, the kinds layer's files in `kinds`.
fn folder(module: &str) -> &str {
    module.split("::").next().unwrap_or(module)
}

fn folder_graph(graph: &BTreeMap<String, BTreeSet<String>>) -> BTreeMap<String, BTreeSet<String>> {
    let mut folders: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, imports) in graph {
        for target in imports {
            if folder(target) != folder(module) && module != "lib" {
                folders
                    .entry(folder(module).to_string())
                    .or_default()
                    .insert(folder(target).to_string());
            }
        }
    }
    folders
}

#[test]
fn folders_import_each_other_one_way_only() {
    let folders = folder_graph(&import_graph());
    let cycles: Vec<String> = folders
        .keys()
        .filter_map(|f| cycle_through(f, &folders))
        .map(|cycle| cycle.join(" -> "))
        .collect();
    assert!(
        cycles.is_empty(),
        "folders that import each other:\n{}",
        cycles.join("\n")
    );
    // The kinds layer reads only the shared field types below the controllers, and the
    // plumbing's way of making a summary type a kind (kubernetes::summary: an agent's
    // pod as cached).
    let below = [
        "kubernetes",
        "api",
        "conditions",
        "duration",
        "template",
        "workspace",
        "pods",
        "labels",
    ];
    let kinds = &folders["kinds"];
    assert!(
        kinds.iter().all(|f| below.contains(&f.as_str())),
        "the kinds layer imports {kinds:?}"
    );
    // Each kind's folder reads the others' types through the kinds layer, and no other
    // kind's folder but the Agent's (a goal's instructions and overseer are agents').
    for (kind, allowed) in [
        ("agent", &[][..]),
        ("swarm", &[][..]),
        ("goal", &["agent"][..]),
        ("prwatch", &[][..]),
    ] {
        let others: Vec<&String> = folders[kind]
            .iter()
            .filter(|f| ["agent", "goal", "prwatch", "swarm"].contains(&f.as_str()))
            .filter(|f| !allowed.contains(&f.as_str()))
            .collect();
        assert!(others.is_empty(), "{kind} imports the folders {others:?}");
    }
    // Delivery sits below every kind's folder: each types into agents through it, and
    // it reads only the kinds layer and the shared modules.
    let delivery = &folders["delivery"];
    let upward: Vec<&String> = delivery
        .iter()
        .filter(|f| {
            [
                "agent", "goal", "prwatch", "swarm", "operator", "commands", "console", "cli",
            ]
            .contains(&f.as_str())
        })
        .collect();
    assert!(upward.is_empty(), "delivery imports {upward:?}");
    // The Kubernetes plumbing knows no kind's rules: it reads no kind's folder, no
    // controller, nothing of the layers above it.
    let plumbing = &folders["kubernetes"];
    let upward: Vec<&String> = plumbing
        .iter()
        .filter(|f| {
            [
                "agent",
                "goal",
                "prwatch",
                "swarm",
                "kinds",
                "delivery",
                "controller",
                "operator",
                "commands",
                "console",
                "cli",
            ]
            .contains(&f.as_str())
        })
        .collect();
    assert!(
        upward.is_empty(),
        "the Kubernetes plumbing imports {upward:?}"
    );
    // The commands layer is the CLI's: no controller or the operator reads it. The
    // console is the CLI in a browser: its actions are the commands themselves.
    let readers: Vec<&String> = folders
        .iter()
        .filter(|(from, tos)| {
            !["cli", "console"].contains(&from.as_str()) && tos.contains("commands")
        })
        .map(|(from, _)| from)
        .collect();
    assert!(readers.is_empty(), "{readers:?} import the commands layer");
}

/// Each function of `source` (tests left out) with its length in lines, from its
/// `fn` line to the brace that closes it at the same indentation.
fn function_lengths(source: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = source.lines().collect();
    let mut found = Vec::new();
    let mut at = 0;
    while at < lines.len() {
        let line = lines[at];
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        let signature = trimmed
            .trim_start_matches("pub(crate) ")
            .trim_start_matches("pub(super) ")
            .trim_start_matches("pub ")
            .trim_start_matches("const ")
            .trim_start_matches("async ");
        // A one-line function is short.
        let Some(rest) = signature
            .strip_prefix("fn ")
            .filter(|_| !trimmed.trim_end().ends_with('}'))
        else {
            at += 1;
            continue;
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let Some(open) = (at..lines.len()).find(|&i| {
            let l = lines[i].trim_end();
            l.ends_with('{') || l.ends_with(';')
        }) else {
            break;
        };
        if lines[open].trim_end().ends_with(';') {
            at = open + 1;
            continue;
        }
        let closing = format!("{indent}}}");
        let end = (open + 1..lines.len())
            .find(|&i| lines[i] == closing)
            .unwrap_or(open);
        found.push((name, end - at + 1));
        at = end + 1;
    }
    found
}

/// Longer than this, a function does several things that want names of their own.
const LONGEST_FUNCTION: usize = 80;

#[test]
fn no_function_is_longer_than_eighty_lines() {
    let mut lengths: Vec<(usize, String)> = modules()
        .iter()
        .flat_map(|(module, source)| {
            function_lengths(source)
                .into_iter()
                .map(move |(name, length)| (length, format!("{module}::{name}")))
        })
        .collect();
    lengths.sort_by(|a, b| b.cmp(a));
    // `cargo test --test module_graph -- --nocapture` shows the longest.
    for (length, name) in lengths.iter().take(10) {
        println!("{length:>4} {name}");
    }
    assert!(
        lengths.len() > 500,
        "the functions were not read: {}",
        lengths.len()
    );
    let long: Vec<&(usize, String)> = lengths
        .iter()
        .filter(|(length, _)| *length > LONGEST_FUNCTION)
        .collect();
    assert!(
        long.is_empty(),
        "functions over {LONGEST_FUNCTION} lines: {long:?}"
    );
}

#[test]
fn function_lengths_run_from_fn_to_its_closing_brace() {
    let source =
        "pub async fn a(\n    x: u8,\n) {\n    if x {\n    }\n}\n\nfn b();\n    fn c() {}\n";
    assert_eq!(function_lengths(source), [("a".to_string(), 6)]);
}
