//! What the readers of status make of a live object: Argo CD's health checks for the
//! four kinds (gitops/argocd/health/<Kind>.lua), run as Argo CD runs them (Lua 5.1, as
//! Argo CD's gopher-lua, the object as the global `obj`, the returned table `hs` read for
//! `status` and `message`), and kstatus, the library behind Flux's `wait` and Helm 4's
//! `--wait` (the `kstatus` tool the test environment builds from cli-utils).

use mlua::serde::SerializeOptions;
use mlua::{LuaSerdeExt, Table};
use serde::Serialize;

use super::cluster::{repo_root, tool};

/// Argo CD's health of `object`, a `kind` of overseer.dev: (status, message).
pub fn argocd<K: Serialize>(kind: &str, object: &K) -> (String, String) {
    let path = repo_root().join(format!("gitops/argocd/health/{kind}.lua"));
    let script = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let lua = mlua::Lua::new();
    // Absent fields are nil, as Argo CD gives them, not a null userdata.
    let options = SerializeOptions::new()
        .serialize_none_to_null(false)
        .serialize_unit_to_null(false);
    let obj = lua
        .to_value_with(&serde_json::to_value(object).unwrap(), options)
        .unwrap();
    lua.globals().set("obj", obj).unwrap();
    let hs: Table = lua
        .load(&script)
        .set_name(format!("{kind}.lua"))
        .eval()
        .unwrap_or_else(|e| panic!("{kind}.lua failed: {e}"));
    let field = |key: &str| hs.get::<Option<String>>(key).unwrap().unwrap_or_default();
    (field("status"), field("message"))
}

/// Asserts Argo CD's health of `object` is `expected`, showing the status it judged.
pub fn assert_argocd<K: Serialize>(kind: &str, object: &K, expected: &str) {
    let (health, message) = argocd(kind, object);
    let object = serde_json::to_value(object).unwrap();
    assert_eq!(
        health, expected,
        "Argo CD health of this {kind}: {health} ({message}); generation {}, status {:#}",
        object["metadata"]["generation"], object["status"]
    );
}

/// kstatus's status of `object` (Current, InProgress, Failed, ...) and its message.
pub fn kstatus<K: Serialize>(object: &K) -> (String, String) {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new(tool("kstatus"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("start kstatus (built by hack/testenv/build.sh, linked by `make cluster`): {e}")
        });
    let json = serde_json::to_vec(object).unwrap();
    child.stdin.take().unwrap().write_all(&json).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "kstatus failed: {out:?}");
    let line = String::from_utf8(out.stdout).unwrap();
    let (status, message) = line
        .trim_end()
        .split_once('\t')
        .unwrap_or((line.trim_end(), ""));
    (status.to_string(), message.to_string())
}

/// What kstatus answers where Argo CD answers `argocd` (docs/gitops.md): Suspended is
/// InProgress, as kstatus has no word for it (the object waits for its spec to resume).
pub fn kstatus_for(argocd: &str) -> &'static str {
    match argocd {
        "Healthy" => "Current",
        "Degraded" => "Failed",
        "Progressing" | "Suspended" => "InProgress",
        other => panic!("no Argo CD health {other:?}"),
    }
}

/// Asserts both readers read `object`, a `kind` in `state` (a row of the table in
/// docs/gitops.md), as the table says: Argo CD `expected`, kstatus its counterpart.
/// Appends the row as read to target/test-logs/readers.txt.
pub fn assert_readers<K: Serialize>(kind: &str, state: &str, object: &K, expected: &str) {
    assert_argocd(kind, object, expected);
    let (status, message) = kstatus(object);
    let value = serde_json::to_value(object).unwrap();
    assert_eq!(
        status,
        kstatus_for(expected),
        "kstatus of this {kind} ({state}): {status} ({message}); status {:#}",
        value["status"]
    );
    let (_, argo_message) = argocd(kind, object);
    let row = format!("| {kind} | {state} | {expected}: {argo_message} | {status}: {message} |\n");
    let log = repo_root().join("target/test-logs/readers.txt");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    std::io::Write::write_all(&mut file, row.as_bytes()).unwrap();
}
