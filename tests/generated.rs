//! Generated files must match the code: `crds/` (what `overseer crd` prints) and
//! `docs/reference.md`. `make generate` (UPDATE_GENERATED=1) rewrites them.

use std::path::{Path, PathBuf};

fn repo_file(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// Compares a checked-in file with what the code generates, or rewrites it on request.
fn check_generated(relative: &str, generated: &str) {
    let path = repo_file(relative);
    if std::env::var_os("UPDATE_GENERATED").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, generated).unwrap();
        return;
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "{relative} has drifted from the code: run `make generate` and commit the result"
    );
}

#[test]
fn crds_directory_matches_the_code() {
    let crds = overseer::crd::all();
    assert_eq!(crds.len(), 4);
    for crd in &crds {
        let name = crd.metadata.name.as_deref().unwrap();
        let yaml = overseer::crd::to_yaml(crd).unwrap();
        // Quoting and line breaks lose nothing: the YAML reads back as the CRD.
        let read_back: serde_json::Value = serde_saphyr::from_str(&yaml).unwrap();
        assert_eq!(read_back, serde_json::to_value(crd).unwrap(), "{name}");
        check_generated(&format!("crds/{name}.yaml"), &yaml);
        // The Helm chart installs the same CRDs.
        check_generated(&format!("charts/overseer/crds/{name}.yaml"), &yaml);
    }
    let on_disk = std::fs::read_dir(repo_file("crds")).unwrap().count();
    assert_eq!(
        on_disk,
        crds.len(),
        "crds/ holds files that `overseer crd` does not print"
    );
}

#[test]
fn api_reference_matches_the_code() {
    check_generated(
        "docs/reference.md",
        &overseer::crd::reference_markdown().unwrap(),
    );
}

/// Where the generated head of docs/runtimes.md ends; what follows is written by hand.
const RUNTIMES_DOC_END: &str = "<!-- end of the generated registry -->\n";

#[test]
fn runtime_registry_doc_matches_the_code() {
    let generated = format!(
        "# Runtime registry\n\nGenerated from `src/runtimes.rs` down to the marker below; a test fails\n\
         when it drifts. A `custom` runtime has no defaults: its `command` is required. A user\n\
         `command` replaces the registry's; then come `--model <runtime.model>` (with the\n\
         runtime's model flag), the autonomy flags (the pod is the sandbox; with\n\
         `runtime.unattended: false` the supervised flags instead), and `args`, before the\n\
         prompt. Before it starts the CLI, the shim seeds the first-run state below into the\n\
         CLI's home (values are added, never removed). In the TUI, the shim answers the\n\
         first-run dialogs below with the keys given when one shows in the prompt area (the\n\
         last 15 non-blank lines of the screen; at most 3 times each, 2 s apart), and matches\n\
         the waiting-for-human patterns in the prompt area only, not in the output above it.\n\
         A headless Agent's command also gets the usage flags below: the CLI then prints JSON\n\
         events, from which the shim sums the attempt's token usage into\n\
         `status.activity.usage` (the TOKENS column of `kubectl get ag -o wide`); the\n\
         container log, and so `overseer peek`, shows those JSON lines. Goal steps keep the\n\
         plain output, which is their result.\n\n{}\n{RUNTIMES_DOC_END}",
        overseer::runtimes::markdown_table()
    );
    let on_disk = std::fs::read_to_string(repo_file("docs/runtimes.md")).unwrap_or_default();
    let by_hand = on_disk
        .split_once(RUNTIMES_DOC_END)
        .map_or("", |(_, rest)| rest);
    check_generated("docs/runtimes.md", &format!("{generated}{by_hand}"));
    // The versions the real CLIs were tested with are the pinned ones.
    let pinned = std::fs::read_to_string(repo_file("hack/image/real-clis.env")).unwrap();
    for line in pinned.lines().filter(|l| !l.starts_with('#')) {
        if let Some((key, version)) = line.split_once('=') {
            assert!(
                by_hand.contains(&format!("| {version} |")),
                "docs/runtimes.md names no tested version {version} ({key} in hack/image/real-clis.env)"
            );
        }
    }
}

#[test]
fn crd_snapshots() {
    // One snapshot per CRD, so that every schema change shows in review.
    for crd in overseer::crd::all() {
        let name = crd.metadata.name.clone().unwrap();
        insta::assert_yaml_snapshot!(name, crd);
    }
}

#[test]
fn crds_have_the_contracted_names() {
    let expected = [
        ("Agent", "agents", "ag"),
        ("Goal", "goals", "gl"),
        ("PRWatch", "prwatches", "prw"),
        ("Swarm", "swarms", "sw"),
    ];
    for (crd, (kind, plural, short)) in overseer::crd::all().iter().zip(expected) {
        let names = &crd.spec.names;
        assert_eq!(crd.spec.group, "overseer.dev");
        assert_eq!(crd.spec.scope, "Namespaced");
        assert_eq!(names.kind, kind);
        assert_eq!(names.plural, plural);
        assert_eq!(names.short_names.as_deref(), Some(&[short.to_string()][..]));
        assert_eq!(
            names.categories.as_deref(),
            Some(&["overseer".to_string()][..])
        );
        let version = &crd.spec.versions[0];
        assert_eq!(version.name, "v1alpha1");
        assert!(
            version
                .subresources
                .as_ref()
                .and_then(|s| s.status.as_ref())
                .is_some(),
            "{kind} lacks /status"
        );
        let columns: Vec<&str> = version
            .additional_printer_columns
            .iter()
            .flatten()
            .map(|c| c.name.as_str())
            .collect();
        assert!(columns.contains(&"Age"), "{kind} columns {columns:?}");
    }
}

/// The four Argo CD health checks as one `argocd-cm` patch, ready for
/// `kubectl -n argocd patch configmap argocd-cm --patch-file ...`.
#[test]
fn argocd_cm_patch_matches_the_health_checks() {
    let mut patch = String::from(
        "# Generated from gitops/argocd/health/*.lua by `make generate`: the operator's health\n\
         # checks for Argo CD. Apply with\n\
         #   kubectl -n argocd patch configmap argocd-cm --patch-file gitops/argocd/argocd-cm-patch.yaml\n\
         data:\n",
    );
    let kinds = ["Agent", "Goal", "PRWatch", "Swarm"];
    let mut scripts = Vec::new();
    for kind in kinds {
        let script =
            std::fs::read_to_string(repo_file(&format!("gitops/argocd/health/{kind}.lua")))
                .unwrap();
        patch.push_str(&format!(
            "  resource.customizations.health.overseer.dev_{kind}: |\n"
        ));
        for line in script.lines() {
            let indent = if line.is_empty() { "" } else { "    " };
            patch.push_str(&format!("{indent}{line}\n"));
        }
        scripts.push(script);
    }
    // The patch reads back as exactly the scripts Argo CD is to run.
    let read: serde_json::Value = serde_saphyr::from_str(&patch).unwrap();
    for (kind, script) in kinds.iter().zip(&scripts) {
        assert_eq!(
            read["data"][format!("resource.customizations.health.overseer.dev_{kind}")],
            serde_json::json!(script),
            "{kind}"
        );
    }
    check_generated("gitops/argocd/argocd-cm-patch.yaml", &patch);
}
