use super::*;

fn policy_with(guards: Guards) -> Policy {
    policy(&guards, "/workspace", &["main".to_string()]).expect("guards on")
}

fn shell(command: &str) -> Call {
    Call::Shell {
        command: command.into(),
        cwd: "/workspace".into(),
    }
}

/// (tool, call, blocked with a reason containing this, or allowed)
fn default_rows() -> Vec<(&'static str, Call, Option<&'static str>)> {
    let write = |path: &str| Call::Write {
        path: path.into(),
        cwd: "/workspace/src".into(),
    };
    let read = |path: &str| Call::Read {
        path: path.into(),
        cwd: "/workspace".into(),
    };
    vec![
        ("Bash", shell("cargo test && git commit -am wip"), None),
        ("Bash", shell("git push origin HEAD:feature-x"), None),
        (
            "Bash",
            shell("git push --force origin feature-x"),
            Some("a force push"),
        ),
        ("Bash", shell("git push -f"), Some("a force push")),
        ("Bash", shell("git push -uf origin x"), Some("a force push")),
        (
            "Bash",
            shell("git push origin +feature-x"),
            Some("a force push"),
        ),
        (
            "Bash",
            shell("git push --force-with-lease"),
            Some("a force push"),
        ),
        (
            "Bash",
            shell("git push origin main"),
            Some("the target branch main"),
        ),
        (
            "Bash",
            shell("git push origin HEAD:refs/heads/main"),
            Some("the target branch main"),
        ),
        ("Bash", shell("git push origin main-fix"), None),
        (
            "Bash",
            shell("cat /var/run/secrets/kubernetes.io/serviceaccount/token"),
            Some("ServiceAccount token"),
        ),
        ("Bash", shell("rm -rf /"), Some("writing / is not allowed")),
        ("Bash", shell("rm -rf build target"), None),
        (
            "Bash",
            shell("echo x > /etc/motd"),
            Some("writing /etc/motd"),
        ),
        ("Bash", shell("make > /tmp/build.log 2>&1"), None),
        ("Bash", shell("cd .. && touch x"), Some("writing /x")),
        ("Write", write("lib.rs"), None),
        (
            "Write",
            write("../../etc/passwd"),
            Some("writing /etc/passwd"),
        ),
        (
            "Edit",
            write("/home/agent/.bashrc"),
            Some("may write only under /workspace, /tmp"),
        ),
        (
            "Read",
            read("/var/run/secrets/kubernetes.io/serviceaccount/token"),
            Some("ServiceAccount token"),
        ),
        ("Read", read("/etc/hosts"), None),
        ("WebFetch", Call::Other, None),
    ]
}

#[test]
fn tool_calls_against_the_default_guards() {
    let policy = policy_with(Guards::default());
    for (tool, call, expected) in default_rows() {
        let verdict = judge(&policy, tool, &call);
        match (expected, &verdict) {
            (None, Verdict::Allow) => {}
            (Some(wanted), Verdict::Block(reason)) => {
                assert!(reason.contains(wanted), "{call:?}: {reason}");
                assert!(reason.starts_with("overseer guard: "), "{reason}");
            }
            _ => panic!("{tool} {call:?}: expected {expected:?}, got {verdict:?}"),
        }
    }
}

#[test]
fn a_spec_adds_patterns_tools_and_its_own_writable_paths() {
    let policy = policy_with(Guards {
        writable_paths: vec!["/workspace/docs".into()],
        denied_commands: vec![r"\bcurl\b".into()],
        denied_tools: vec!["WebFetch".into()],
        ..Guards::default()
    });
    let write = |path: &str| Call::Write {
        path: path.into(),
        cwd: "/workspace".into(),
    };
    assert_eq!(judge(&policy, "Write", &write("docs/a.md")), Verdict::Allow);
    assert!(matches!(
        judge(&policy, "Write", &write("src/a.rs")),
        Verdict::Block(_)
    ));
    assert!(
        matches!(judge(&policy, "Write", &write("/tmp/a")), Verdict::Block(_)),
        "/tmp is a default only"
    );
    let Verdict::Block(reason) = judge(&policy, "Bash", &shell("curl https://example.com")) else {
        panic!("curl is denied");
    };
    assert!(
        reason.contains(r#"a command matching "\\bcurl\\b""#),
        "{reason}"
    );
    let Verdict::Block(reason) = judge(&policy, "WebFetch", &Call::Other) else {
        panic!("WebFetch is denied");
    };
    assert_eq!(
        reason,
        "overseer guard: the tool WebFetch is not allowed for this agent"
    );
}

#[test]
fn a_pattern_that_does_not_compile_blocks_every_command() {
    let policy = policy_with(Guards {
        denied_commands: vec!["(unclosed".into()],
        ..Guards::default()
    });
    let Verdict::Block(reason) = judge(&policy, "Bash", &shell("ls")) else {
        panic!("fails closed");
    };
    assert!(reason.contains("does not compile"), "{reason}");
}

#[test]
fn guards_off_make_no_policy() {
    let off = Guards {
        enabled: false,
        ..Guards::default()
    };
    assert_eq!(policy(&off, "/workspace", &[]), None);
}

#[test]
fn claude_hook_input_as_the_cli_sends_it() {
    // The shape of Claude Code's PreToolUse input (the hooks reference).
    let input: claude::HookInput = serde_json::from_value(serde_json::json!({
        "session_id": "abc", "transcript_path": "/home/agent/.claude/projects/x.jsonl",
        "cwd": "/workspace", "permission_mode": "bypassPermissions",
        "hook_event_name": "PreToolUse", "tool_name": "Write",
        "tool_input": {"file_path": "/etc/passwd", "content": "x"},
        "tool_use_id": "toolu_01"
    }))
    .unwrap();
    assert_eq!(
        claude::call(&input),
        Call::Write {
            path: "/etc/passwd".into(),
            cwd: "/workspace".into()
        }
    );
    insta::assert_yaml_snapshot!(claude::managed_settings());
}

#[test]
fn the_pod_carries_its_policy_read_only_and_its_clis_hook_settings() {
    use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
    let policy = policy_with(Guards::default());
    let bare = || Pod {
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "agent".into(),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut claude = bare();
    pod::dress(&mut claude, &policy, crate::api::RuntimeName::Claude);
    let annotations = claude.metadata.annotations.as_ref().unwrap();
    let carried: Policy = serde_json::from_str(&annotations[pod::POLICY_ANNOTATION]).unwrap();
    assert_eq!(carried, policy, "the policy as the hook will read it");
    let settings: serde_json::Value =
        serde_json::from_str(&annotations[pod::CLAUDE_SETTINGS_ANNOTATION]).unwrap();
    assert_eq!(settings, claude::managed_settings());
    let spec = claude.spec.as_ref().unwrap();
    let volume = spec.volumes.as_ref().unwrap().last().unwrap();
    let files: Vec<&str> = volume
        .downward_api
        .as_ref()
        .unwrap()
        .items
        .as_ref()
        .unwrap()
        .iter()
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(files, ["policy.json", "claude-managed-settings.json"]);
    let mounts: Vec<(&str, bool)> = spec.containers[0]
        .volume_mounts
        .as_ref()
        .unwrap()
        .iter()
        .map(|m| (m.mount_path.as_str(), m.read_only == Some(true)))
        .collect();
    assert_eq!(
        mounts,
        [(POLICY_DIR, true), (claude::MANAGED_SETTINGS, true)],
        "both read-only"
    );
    assert_eq!(format!("{POLICY_DIR}/{POLICY_FILE}"), POLICY_PATH);

    let mut codex_pod = bare();
    pod::dress(&mut codex_pod, &policy, crate::api::RuntimeName::Codex);
    let mounts = codex_pod.spec.unwrap().containers[0]
        .volume_mounts
        .clone()
        .unwrap();
    assert_eq!(mounts[1].mount_path, codex::REQUIREMENTS);
    assert_eq!(
        codex_pod.metadata.annotations.unwrap()[pod::CODEX_REQUIREMENTS_ANNOTATION],
        codex::requirements()
    );
}

#[test]
fn copilot_and_pi_load_their_hook_by_a_flag_after_the_users_args() {
    use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
    let policy = policy_with(Guards::default());
    let with_command = || Pod {
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "agent".into(),
                command: Some(vec![
                    "overseer".into(),
                    "shim".into(),
                    "--".into(),
                    "cli".into(),
                ]),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    for (runtime, files, flags) in [
        (
            crate::api::RuntimeName::Copilot,
            vec![
                "policy.json",
                "copilot-plugin/plugin.json",
                "copilot-plugin/hooks/hooks.json",
            ],
            vec!["--plugin-dir", "/etc/overseer/guard/copilot-plugin"],
        ),
        (
            crate::api::RuntimeName::Pi,
            vec!["policy.json", "pi-guard.ts"],
            vec!["--no-extensions", "-e", "/etc/overseer/guard/pi-guard.ts"],
        ),
        (crate::api::RuntimeName::Cursor, vec!["policy.json"], vec![]),
    ] {
        let mut pod = with_command();
        pod::dress(&mut pod, &policy, runtime);
        let spec = pod.spec.unwrap();
        let items: Vec<String> = spec.volumes.unwrap()[0]
            .downward_api
            .clone()
            .unwrap()
            .items
            .unwrap()
            .into_iter()
            .map(|f| f.path)
            .collect();
        assert_eq!(items, files, "{runtime:?}");
        let container = &spec.containers[0];
        assert_eq!(
            container.volume_mounts.as_ref().unwrap().len(),
            1,
            "{runtime:?}: the guard volume only"
        );
        let command = container.command.clone().unwrap();
        assert_eq!(command[..4], ["overseer", "shim", "--", "cli"]);
        assert_eq!(command[4..], flags, "{runtime:?}");
    }
}

#[test]
fn a_codex_patch_is_judged_by_every_file_it_writes() {
    // codex's PreToolUse input is Claude Code's shape (recorded from codex 0.171 for Bash);
    // a patch carries its files in apply_patch's own markers.
    let input: claude::HookInput = serde_json::from_value(serde_json::json!({
        "session_id": "s", "turn_id": "t", "cwd": "/workspace", "hook_event_name": "PreToolUse",
        "model": "gpt-5.5-codex", "permission_mode": "bypassPermissions", "tool_name": "apply_patch",
        "tool_input": {"command": "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n-a\n+b\n*** Add File: /etc/cron.d/x\n+* * * * * root true\n*** End Patch\n"},
        "tool_use_id": "call_1"
    }))
    .unwrap();
    let calls = codex::calls(&input);
    let write = |path: &str| Call::Write {
        path: path.into(),
        cwd: "/workspace".into(),
    };
    assert_eq!(calls, [write("src/lib.rs"), write("/etc/cron.d/x")]);
    let policy = policy_with(Guards::default());
    assert!(matches!(
        judge(&policy, "apply_patch", &calls[1]),
        Verdict::Block(_)
    ));
    insta::assert_snapshot!(codex::requirements());
}

#[test]
fn the_target_branches_are_where_the_queue_lands_else_where_the_workspace_starts() {
    let workspace = |r#ref: Option<&str>| -> crate::workspace::Workspace {
        serde_json::from_value(serde_json::json!({
            "git": {"url": "https://git.example/r.git", "ref": r#ref}
        }))
        .unwrap()
    };
    let queue = |target: Option<&str>| -> crate::kinds::merge::MergePolicy {
        serde_json::from_value(serde_json::json!({"target": target})).unwrap()
    };
    let trunk = workspace(Some("trunk"));
    let cases = [
        (Some(queue(Some("release"))), Some(&trunk), vec!["release"]),
        (Some(queue(None)), Some(&trunk), vec!["trunk"]),
        (Some(queue(None)), None, vec!["main"]),
        (None, Some(&trunk), vec!["trunk"]),
        (None, None, vec!["main", "master"]),
    ];
    for (merge, start, want) in cases {
        assert_eq!(targets(merge.as_ref(), start), want, "{merge:?} {start:?}");
    }
}

#[test]
fn copilot_hook_input_as_the_cli_sends_it() {
    // Recorded from copilot 1.0.102's preToolUse hook (a plugin's), and the argument
    // shapes of its file and search tools as it offers them to the model.
    let input =
        |value: serde_json::Value| -> copilot::HookInput { serde_json::from_value(value).unwrap() };
    let bash = input(serde_json::json!({
        "sessionId": "5c13a15d-e662-4e84-bb72-82f175e3c570", "timestamp": 1796636059033u64,
        "cwd": "/workspace", "toolName": "bash",
        "toolArgs": {"command": "echo probe > ~/outside && echo wrote", "description": "Run a command"}
    }));
    assert_eq!(
        copilot::calls(&bash),
        [Call::Shell {
            command: "echo probe > ~/outside && echo wrote".into(),
            cwd: "/workspace".into()
        }]
    );
    let policy = policy_with(Guards::default());
    let token = input(serde_json::json!({"cwd": "/w", "toolName": "grep",
        "toolArgs": {"pattern": "x", "paths": ["src", "/run/secrets/kubernetes.io"]}}));
    assert!(
        copilot::calls(&token)
            .iter()
            .any(|call| matches!(judge(&policy, "grep", call), Verdict::Block(_))),
        "a search that names the token's folder among others is blocked"
    );
    insta::assert_snapshot!(format!(
        "plugin.json: {}\nhooks/hooks.json: {}\ndeny: {}",
        copilot::manifest(),
        copilot::hooks(),
        copilot::deny("overseer guard: a force push is not allowed for this agent")
    ));
}

#[test]
fn copilot_file_and_search_tools_by_their_paths() {
    let input =
        |value: serde_json::Value| -> copilot::HookInput { serde_json::from_value(value).unwrap() };
    let at = |path: &str| path.to_string();
    let rows = [
        (
            "create",
            serde_json::json!({"path": "/etc/x", "file_text": "x"}),
            vec![Call::Write {
                path: at("/etc/x"),
                cwd: at("/w"),
            }],
        ),
        (
            "edit",
            serde_json::json!({"path": "src/a.rs", "old_str": "a", "new_str": "b"}),
            vec![Call::Write {
                path: at("src/a.rs"),
                cwd: at("/w"),
            }],
        ),
        (
            "view",
            serde_json::json!({"path": "/var/run/secrets/kubernetes.io/serviceaccount/token"}),
            vec![Call::Read {
                path: at("/var/run/secrets/kubernetes.io/serviceaccount/token"),
                cwd: at("/w"),
            }],
        ),
        (
            "grep",
            serde_json::json!({"pattern": "x", "paths": ["src", "/run/secrets/kubernetes.io"]}),
            vec![
                Call::Read {
                    path: at("src"),
                    cwd: at("/w"),
                },
                Call::Read {
                    path: at("/run/secrets/kubernetes.io"),
                    cwd: at("/w"),
                },
            ],
        ),
        (
            "glob",
            serde_json::json!({"pattern": "*", "paths": "docs"}),
            vec![Call::Read {
                path: at("docs"),
                cwd: at("/w"),
            }],
        ),
        (
            "glob",
            serde_json::json!({"pattern": "*"}),
            vec![Call::Other],
        ),
        (
            "sql",
            serde_json::json!({"query": "select 1"}),
            vec![Call::Other],
        ),
    ];
    for (tool, args, expected) in rows {
        let call = input(serde_json::json!({"cwd": "/w", "toolName": tool, "toolArgs": args}));
        assert_eq!(copilot::calls(&call), expected, "{tool}");
    }
}

#[test]
fn pi_tool_calls_as_its_extension_hands_them_on() {
    // The event's fields as pi 0.73.1's extension runner gives them (toolName, input)
    // with the context's cwd, and its built-in tools' parameters.
    let call = |tool: &str, input: serde_json::Value| {
        pi::call(
            &serde_json::from_value(
                serde_json::json!({"toolName": tool, "input": input, "cwd": "/workspace"}),
            )
            .unwrap(),
        )
    };
    let at = |path: &str| path.to_string();
    let rows = [
        (
            "bash",
            serde_json::json!({"command": "git push -f", "timeout": 30}),
            Call::Shell {
                command: at("git push -f"),
                cwd: at("/workspace"),
            },
        ),
        (
            "write",
            serde_json::json!({"path": "/etc/x", "content": "x"}),
            Call::Write {
                path: at("/etc/x"),
                cwd: at("/workspace"),
            },
        ),
        (
            "edit",
            serde_json::json!({"path": "a.rs", "edits": []}),
            Call::Write {
                path: at("a.rs"),
                cwd: at("/workspace"),
            },
        ),
        (
            "read",
            serde_json::json!({"path": "/run/secrets/kubernetes.io/serviceaccount/token"}),
            Call::Read {
                path: at("/run/secrets/kubernetes.io/serviceaccount/token"),
                cwd: at("/workspace"),
            },
        ),
        (
            "grep",
            serde_json::json!({"pattern": "x", "path": "src"}),
            Call::Read {
                path: at("src"),
                cwd: at("/workspace"),
            },
        ),
        ("find", serde_json::json!({"pattern": "*.rs"}), Call::Other),
        (
            "ls",
            serde_json::json!({"path": "."}),
            Call::Read {
                path: at("."),
                cwd: at("/workspace"),
            },
        ),
        (
            "my_tool",
            serde_json::json!({"path": "/etc/x"}),
            Call::Other,
        ),
    ];
    for (tool, input, expected) in rows {
        assert_eq!(call(tool, input), expected, "{tool}");
    }
    insta::assert_snapshot!(pi::extension());
}
