//! Argo CD's health checks for the four kinds (gitops/argocd/health/<Kind>.lua), run as
//! Argo CD runs them: Lua 5.1 (Argo CD's gopher-lua), the object as the global `obj`,
//! the script's returned table `hs` read for `status` and `message`.

use mlua::serde::SerializeOptions;
use mlua::{LuaSerdeExt, Table};
use serde::Serialize;

use super::cluster::repo_root;

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
