use super::*;

fn workspace(yaml: &str) -> Workspace {
    serde_saphyr::from_str(yaml).unwrap()
}

#[test]
fn a_persistent_workspace_is_a_claim_and_an_empty_one_a_directory() {
    let persistent = workspace(
        "{git: {url: 'https://github.com/acme/widgets.git', ref: main, credentialsSecretRef: {name: git}}, storage: {persistent: {size: 10Gi, storageClassName: fast}}}",
    );
    let pvc = claim(&persistent, ObjectMeta::default(), "ship", BTreeMap::new()).unwrap();
    insta::assert_yaml_snapshot!(
        "persistent_workspace",
        (
            &pvc,
            volumes(&persistent, "ship"),
            mounts(&persistent, false),
            sync_container(
                &persistent,
                Some("example.com/codex:1"),
                &default_branch("ship")
            ),
        )
    );
    let empty = workspace("{}");
    assert!(claim(&empty, ObjectMeta::default(), "ship", BTreeMap::new()).is_none());
    assert!(volumes(&empty, "ship")[0].empty_dir.is_some());
    assert!(
        sync_container(&empty, None, "b").is_none(),
        "no source, nothing to clone"
    );
    assert_eq!(
        mounts(&empty, true),
        vec![VolumeMount {
            name: VOLUME.into(),
            mount_path: DIR.into(),
            read_only: Some(true),
            ..Default::default()
        }],
        "a read-only role"
    );
}
