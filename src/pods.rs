//! Pieces every generated pod shares: the `overseer` binary copied in by an init
//! container, and the restricted Pod Security Standard.

use k8s_openapi::api::core::v1::{
    Capabilities, Container, EmptyDirVolumeSource, EnvVar, PodSecurityContext, SeccompProfile,
    SecurityContext, Volume, VolumeMount,
};

/// Why the API server refused a pod the operator built from a user's template
/// (400: it could not be decoded, such as a malformed quantity; 422: it is invalid;
/// 403 from an admission plugin: a RuntimeClass that does not exist, a Pod Security
/// violation), in words for a condition; None for any other error (an RBAC 403 says
/// the operator "cannot create" pods: retried), which is retried. Such a pod would be
/// refused again on every retry, so the object waits for its next change.
pub fn refusal(error: &kube::Error) -> Option<String> {
    const MAX: usize = 1024;
    match error {
        kube::Error::Api(status)
            if matches!(status.code, 400 | 422)
                || (status.code == 403 && !status.message.contains("cannot create")) =>
        {
            let message = format!("the API server refused the pod: {}", status.message);
            Some(message.chars().take(MAX).collect())
        }
        _ => None,
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(code: u16, message: &str) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure(message, "Forbidden")
                .with_code(code)
                .boxed(),
        )
    }

    #[test]
    fn a_pod_admission_refuses_is_a_condition_and_missing_rights_are_retried() {
        let admission = refused(
            403,
            "pods \"f77-1\" is forbidden: pod rejected: RuntimeClass \"x\" not found",
        );
        assert!(refusal(&admission).is_some(), "admission: a condition");
        let rbac = refused(
            403,
            "pods is forbidden: User \"system:serviceaccount:o:o\" cannot create resource \"pods\"",
        );
        assert!(refusal(&rbac).is_none(), "RBAC: retried");
        assert!(refusal(&refused(422, "spec.containers[0].image: Required value")).is_some());
        assert!(refusal(&refused(500, "etcdserver: request timed out")).is_none());
    }
}
