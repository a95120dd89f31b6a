//! Pieces every generated pod shares: the `overseer` binary copied in by an init
//! container, and the restricted Pod Security Standard.

use k8s_openapi::api::core::v1::{
    Capabilities, Container, EmptyDirVolumeSource, EnvVar, PodSecurityContext, SeccompProfile,
    SecurityContext, Volume, VolumeMount,
};

/// An environment variable with a plain value.
pub fn env(name: &str, value: impl Into<String>) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: Some(value.into()),
        ..Default::default()
    }
}

/// Where the init container puts the `overseer` binary.
pub const BIN_DIR: &str = "/overseer/bin";
/// The emptyDir holding the binary and the shim's socket.
const VOLUME: &str = "overseer";
/// Where the init container sees that emptyDir: not at `/overseer`, which in the
/// operator image is the binary itself (a container cannot mount a directory over a file).
const INSTALL_DIR: &str = "/install";

/// The init container that copies the operator's own binary into the pod.
pub fn install_container(overseer_image: &str) -> Container {
    Container {
        name: "install-overseer".into(),
        image: Some(overseer_image.into()),
        command: Some(vec![
            "/overseer".into(),
            "install".into(),
            // BIN_DIR's place in the volume, as the other containers see it.
            format!("{INSTALL_DIR}/bin/overseer"),
        ]),
        volume_mounts: Some(vec![VolumeMount {
            name: VOLUME.into(),
            mount_path: INSTALL_DIR.into(),
            ..Default::default()
        }]),
        security_context: Some(restricted()),
        ..Default::default()
    }
}

pub fn overseer_volume() -> Volume {
    Volume {
        name: VOLUME.into(),
        empty_dir: Some(EmptyDirVolumeSource::default()),
        ..Default::default()
    }
}

/// The operator's volume as a container sees it: `/overseer` writable (the shim's
/// socket and run files), and `BIN_DIR` mounted again over it read-only, so nothing in
/// the pod can replace the binary that exec runs for the operator.
pub fn overseer_mounts() -> [VolumeMount; 2] {
    [
        VolumeMount {
            name: VOLUME.into(),
            mount_path: "/overseer".into(),
            ..Default::default()
        },
        VolumeMount {
            name: VOLUME.into(),
            mount_path: BIN_DIR.into(),
            sub_path: Some("bin".into()),
            read_only: Some(true),
            ..Default::default()
        },
    ]
}

/// A read-only role mounts everything of the user's read-only, its pod template's
/// mounts included: the platform enforces the role's boundary, not the prompt. Only
/// the shim's own directory stays writable.
pub fn read_only_mounts(pod: &mut k8s_openapi::api::core::v1::Pod) {
    let mounts = pod
        .spec
        .iter_mut()
        .flat_map(|s| s.containers.iter_mut())
        .flat_map(|c| c.volume_mounts.iter_mut().flatten());
    for mount in mounts {
        if !is_overseer_volume(mount) {
            mount.read_only = Some(true);
        }
    }
}

/// The name of the operator's volume.
pub fn is_overseer_volume(mount: &VolumeMount) -> bool {
    mount.name == VOLUME
}

/// The restricted Pod Security Standard, per pod.
pub fn restricted_pod() -> PodSecurityContext {
    PodSecurityContext {
        run_as_non_root: Some(true),
        seccomp_profile: Some(SeccompProfile {
            type_: "RuntimeDefault".into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The restricted Pod Security Standard, per container.
pub fn restricted() -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".into()]),
            ..Default::default()
        }),
        run_as_non_root: Some(true),
        ..Default::default()
    }
}
