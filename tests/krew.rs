//! The krew manifest of the kubectl plugin, written by hack/krew/manifest.sh from a
//! release archive: what krew reads, with the archive's checksum and the binary it
//! installs.

use std::path::Path;
use std::process::{Command, Output};

/// `archive`, a .tar.gz of the file `file` of `dir`.
fn pack(archive: &Path, dir: &Path, file: &str) {
    let packed = Command::new("tar")
        .arg("-czf")
        .arg(archive)
        .arg("-C")
        .arg(dir)
        .arg(file)
        .status()
        .unwrap();
    assert!(packed.success(), "tar of {file}");
}

/// hack/krew/manifest.sh for `archive`, published under a test URL.
fn write_manifest(archive: &Path) -> Output {
    Command::new("bash")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/hack/krew/manifest.sh"
        ))
        .arg("https://example.com/releases/v1")
        .arg(archive)
        .output()
        .unwrap()
}

#[test]
fn the_manifest_names_the_archive_its_checksum_and_the_plugin_binary() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/krew-test");
    std::fs::create_dir_all(&dir).unwrap();
    // The archive's content is what its checksum covers; a stand-in binary keeps the
    // test quick (the debug build is hundreds of megabytes).
    let staged = dir.join("staged");
    std::fs::create_dir_all(&staged).unwrap();
    std::fs::write(
        staged.join("kubectl-overseer"),
        "#!/bin/sh\necho overseer\n",
    )
    .unwrap();
    let archive = dir.join("kubectl-overseer-linux-amd64.tar.gz");
    pack(&archive, &staged, "kubectl-overseer");
    let out = write_manifest(&archive);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let manifest: serde_json::Value = serde_saphyr::from_slice(&out.stdout).unwrap();
    assert_eq!(manifest["kind"], "Plugin");
    assert_eq!(manifest["metadata"]["name"], "overseer");
    assert_eq!(
        manifest["spec"]["version"],
        concat!("v", env!("CARGO_PKG_VERSION"))
    );
    let platform = &manifest["spec"]["platforms"][0];
    assert_eq!(
        platform["selector"]["matchLabels"],
        serde_json::json!({"os": "linux", "arch": "amd64"})
    );
    assert_eq!(platform["bin"], "kubectl-overseer");
    assert_eq!(
        platform["uri"],
        "https://example.com/releases/v1/kubectl-overseer-linux-amd64.tar.gz"
    );
    let sha = Command::new("sha256sum").arg(&archive).output().unwrap();
    let sha = String::from_utf8_lossy(&sha.stdout);
    assert_eq!(platform["sha256"].as_str(), sha.split_whitespace().next());

    // An archive without the binary at its top is refused.
    let empty = dir.join("kubectl-overseer-darwin-arm64.tar.gz");
    pack(&empty, &dir, "kubectl-overseer-linux-amd64.tar.gz");
    let refused = write_manifest(&empty);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("holds no kubectl-overseer"));
}
