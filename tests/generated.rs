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

/// charts/overseer/README.md: how to install the published chart, then every value of
/// values.yaml with its default and the comment above it (what helm-docs does for Go
/// charts), so the README never says what the chart does not.
#[test]
fn chart_readme_matches_the_values() {
    let values = std::fs::read_to_string(repo_file("charts/overseer/values.yaml")).unwrap();
    let chart = std::fs::read_to_string(repo_file("charts/overseer/Chart.yaml")).unwrap();
    let description = chart
        .lines()
        .find_map(|l| l.strip_prefix("description: "))
        .unwrap();
    let rows = values_rows(&values);
    // Every key of values.yaml is documented, and described.
    let parsed: serde_json::Value = serde_saphyr::from_str(&values).unwrap();
    let mut undescribed = Vec::new();
    for (key, _, about) in &rows {
        let at = key.split('.').fold(&parsed, |at, part| &at[part]);
        assert!(
            at.is_string() || !at.is_null(),
            "{key} is not a key of values.yaml"
        );
        if about.is_empty() {
            undescribed.push(key.as_str());
        }
    }
    assert!(
        undescribed.is_empty(),
        "values.yaml has no comment for {undescribed:?}"
    );
    let mut readme = format!(
        "# overseer\n\n{description}.\n\n<!-- Generated from values.yaml and Chart.yaml by `make generate`; \
         a test fails when it drifts. -->\n\n\
         ## Install\n\n\
         The chart and the image are published to GHCR as OCI artifacts, signed with cosign by\n\
         the release workflow; the chart pins the image by its digest.\n\n\
         ```sh\n\
         helm install overseer oci://ghcr.io/overseer-dev/charts/overseer --version VERSION \\\n  \
         -n overseer-system --create-namespace\n\
         cosign verify ghcr.io/overseer-dev/charts/overseer:VERSION \\\n  \
         --certificate-identity-regexp 'https://github.com/overseer-dev/overseer/.github/workflows/release.yml@.*' \\\n  \
         --certificate-oidc-issuer https://token.actions.githubusercontent.com\n\
         ```\n\n\
         Helm installs `crds/` on the first install and never upgrades them: apply the new\n\
         chart's CRDs first on an upgrade (`helm show crds ... | kubectl apply --server-side -f -`).\n\
         What the chart makes, its permissions and its metrics: \
         [docs/operations.md](https://github.com/overseer-dev/overseer/blob/main/docs/operations.md).\n\n\
         ## Values\n\n\
         `values.schema.json` refuses unknown keys and unsafe combinations.\n\n\
         | key | default | description |\n|---|---|---|\n"
    );
    for (key, default, about) in rows {
        let default = if default.is_empty() {
            String::new()
        } else {
            format!("`{}`", default.replace('|', "\\|"))
        };
        readme.push_str(&format!(
            "| `{key}` | {default} | {} |\n",
            about.replace('|', "\\|")
        ));
    }
    check_generated("charts/overseer/README.md", &readme);
}

/// (dotted key, default as written, comment) for each key of values.yaml: the comment
/// lines right above it and its inline comment. A parent with a comment has a row; its
/// leaves without one of their own say "(above)".
fn values_rows(values: &str) -> Vec<(String, String, String)> {
    let mut rows: Vec<(String, String, String)> = Vec::new();
    let mut path: Vec<(usize, String, String)> = Vec::new();
    let mut comment: Vec<String> = Vec::new();
    for line in values.lines() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if trimmed.is_empty() {
            comment.clear();
            continue;
        }
        if let Some(text) = trimmed.strip_prefix('#') {
            comment.push(text.trim().to_string());
            continue;
        }
        if let Some(item) = trimmed.strip_prefix("- ") {
            // An item of the list the last key holds: part of that key's default.
            let owner: Vec<&str> = path.iter().map(|(_, k, _)| k.as_str()).collect();
            let owner = owner.join(".");
            if rows.last().is_none_or(|r| r.0 != owner) {
                rows.push((owner, String::new(), String::new()));
            }
            let last = rows.last_mut().expect("pushed above");
            let items = last.1.trim_start_matches('[').trim_end_matches(']');
            let joined: Vec<&str> = [items, item]
                .into_iter()
                .filter(|s| !s.is_empty())
                .collect();
            last.1 = format!("[{}]", joined.join(", "));
            continue;
        }
        let Some((key, rest)) = trimmed.split_once(':') else {
            continue;
        };
        while path.last().is_some_and(|(at, _, _)| *at >= indent) {
            path.pop();
        }
        let (value, inline) = match rest.split_once(" #") {
            Some((value, inline)) => (value.trim(), inline.trim()),
            None => (rest.trim(), ""),
        };
        let mut about: Vec<String> = std::mem::take(&mut comment);
        if !inline.is_empty() {
            about.push(inline.to_string());
        }
        let mut about = about.join(" ");
        let mut keys: Vec<&str> = path.iter().map(|(_, k, _)| k.as_str()).collect();
        keys.push(key);
        let dotted = keys.join(".");
        if value.is_empty() {
            // A parent: its comment is a row of its own, and speaks for its leaves.
            if !about.is_empty() {
                rows.push((dotted, String::new(), about.clone()));
            }
            path.push((indent, key.to_string(), about));
            continue;
        }
        if about.is_empty() && path.iter().any(|(_, _, a)| !a.is_empty()) {
            about = "(above)".to_string();
        }
        rows.push((dotted, value.to_string(), about));
    }
    rows
}
