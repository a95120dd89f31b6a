//! Creating a pod the operator owns, the one way every kind does it: its workspace's
//! claim applied first (a pod must not wait on a claim that is not there), then the
//! pod under its deterministic name, where a 409 is this owner's own pod from before a
//! crash between create and record, or another owner's, which is never taken.

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::api::PostParams;
use kube::{Api, ResourceExt};

use crate::api::{apply_owned, ours_or_absent};

/// Applies `claim` (if any) then creates `pod`, both owned by the object of uid
/// `owner_uid`. Ok also when the pod exists already as that owner's;
/// `Error::NameTaken` when the claim's or the pod's name is another owner's.
pub async fn create(
    pods: &Api<Pod>,
    claim: Option<PersistentVolumeClaim>,
    pod: &Pod,
    owner_uid: &str,
) -> crate::Result<()> {
    if let Some(claim) = claim {
        let namespace = claim.metadata.namespace.clone().unwrap_or_default();
        let claims =
            Api::<PersistentVolumeClaim>::namespaced(pods.clone().into_client(), &namespace);
        apply_owned(&claims, &claim.name_any(), owner_uid, &claim).await?;
    }
    match pods.create(&PostParams::default(), pod).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => {
            let name = pod.name_any();
            ours_or_absent(pods.get_opt(&name).await?.as_ref(), &name, owner_uid)
        }
        Err(error) => Err(error.into()),
    }
}

/// Why the API server refused a pod (or its claim) the operator built from a user's
/// template (400: it could not be decoded, such as a malformed quantity; 422: it is
/// invalid; 403 from an admission plugin: a RuntimeClass that does not exist, a Pod
/// Security violation), in words for a condition; None for any other error (an RBAC
/// 403 says the operator "cannot create" pods), which is retried. Such a pod would be
/// refused again on every retry, so the object waits for its next change.
pub fn refusal(error: &crate::Error) -> Option<String> {
    const MAX: usize = 1024;
    match error {
        crate::Error::Kube(kube::Error::Api(status))
            if matches!(status.code, 400 | 422)
                || (status.code == 403 && !status.message.contains("cannot create")) =>
        {
            let message = format!("the API server refused the pod: {}", status.message);
            Some(message.chars().take(MAX).collect())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(code: u16, message: &str) -> crate::Error {
        crate::Error::Kube(kube::Error::Api(
            kube::core::Status::failure(message, "Forbidden")
                .with_code(code)
                .boxed(),
        ))
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
