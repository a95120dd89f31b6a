use super::*;

fn template(yaml: &str) -> PodTemplate {
    serde_saphyr::from_str(yaml).expect("a pod template")
}

#[test]
fn layers_merge_in_order_each_over_the_ones_before() {
    // (case, layers first to last, the merged template)
    let table: &[(&str, &[&str], &str)] = &[
        ("no layers", &[], "{}"),
        (
            "maps merge key by key, the later value wins",
            &[
                "{labels: {team: a, tier: x}, nodeSelector: {pool: cpu}}",
                "{labels: {team: b}, annotations: {note: n}, nodeSelector: {zone: z}}",
            ],
            "{labels: {team: b, tier: x}, annotations: {note: n}, nodeSelector: {pool: cpu, zone: z}}",
        ),
        (
            "env by name: the later one replaces the earlier, the rest keep their order",
            &[
                "{env: [{name: A, value: '1'}, {name: B, value: '1'}]}",
                "{env: [{name: A, value: '2'}, {name: C, value: '2'}]}",
            ],
            "{env: [{name: B, value: '1'}, {name: A, value: '2'}, {name: C, value: '2'}]}",
        ),
        (
            "envFrom and tolerations are appended, exact repeats once",
            &[
                "{envFrom: [{secretRef: {name: keys}}], tolerations: [{key: gpu, operator: Exists}]}",
                "{envFrom: [{secretRef: {name: keys}}, {configMapRef: {name: cfg}}], tolerations: [{key: spot, operator: Exists}]}",
            ],
            "{envFrom: [{secretRef: {name: keys}}, {configMapRef: {name: cfg}}], tolerations: [{key: gpu, operator: Exists}, {key: spot, operator: Exists}]}",
        ),
        (
            "resources by resource name within requests and limits",
            &[
                "{resources: {requests: {cpu: '1', memory: 1Gi}, limits: {memory: 2Gi}}}",
                "{resources: {requests: {cpu: '2'}}}",
            ],
            "{resources: {requests: {cpu: '2', memory: 1Gi}, limits: {memory: 2Gi}}}",
        ),
        (
            "volumes by name, mounts by path, pull secrets by name",
            &[
                "{volumes: [{name: cache, emptyDir: {}}], volumeMounts: [{name: cache, mountPath: /cache}], imagePullSecrets: [{name: reg}]}",
                "{volumes: [{name: cache, persistentVolumeClaim: {claimName: c}}], volumeMounts: [{name: cache2, mountPath: /cache}], imagePullSecrets: [{name: reg}, {name: other}]}",
            ],
            "{volumes: [{name: cache, persistentVolumeClaim: {claimName: c}}], volumeMounts: [{name: cache2, mountPath: /cache}], imagePullSecrets: [{name: reg}, {name: other}]}",
        ),
        (
            "affinity and runtime class replaced whole; security field by field",
            &[
                "{runtimeClassName: gvisor, securityContext: {runAsUser: 1000, fsGroup: 2000}, affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, preference: {matchExpressions: [{key: a, operator: Exists}]}}]}}}",
                "{securityContext: {runAsUser: 1001}, affinity: {podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 5, podAffinityTerm: {topologyKey: kubernetes.io/hostname}}]}}}",
            ],
            "{runtimeClassName: gvisor, securityContext: {runAsUser: 1001, fsGroup: 2000}, affinity: {podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 5, podAffinityTerm: {topologyKey: kubernetes.io/hostname}}]}}}",
        ),
        (
            "an empty layer changes nothing",
            &[
                "{env: [{name: A, value: '1'}], resources: {limits: {cpu: '1'}}}",
                "{}",
            ],
            "{env: [{name: A, value: '1'}], resources: {limits: {cpu: '1'}}}",
        ),
    ];
    for (case, layers, expected) in table {
        let layers: Vec<PodTemplate> = layers.iter().map(|l| template(l)).collect();
        let merged = PodTemplate::layered(layers.iter().map(Some));
        assert_eq!(merged, template(expected), "{case}");
    }
}

#[test]
fn absent_layers_are_skipped() {
    let own = template("{env: [{name: A, value: '1'}]}");
    assert_eq!(PodTemplate::layered([None, Some(&own), None]), own);
}

#[test]
fn the_operators_settings_win_when_dressing_a_pod() {
    let mut pod: Pod = serde_saphyr::from_str(
        r#"
metadata: {name: p, labels: {overseer.dev/agent: a}}
spec:
  securityContext: {runAsNonRoot: true}
  containers:
    - name: agent
      env: [{name: OVERSEER_AGENT, value: a}]
      volumeMounts: [{name: overseer, mountPath: /overseer}]
  volumes: [{name: overseer, emptyDir: {}}]
"#,
    )
    .unwrap();
    template(
        r#"
labels: {team: billing}
annotations: {note: n}
env: [{name: OVERSEER_AGENT, value: someone-else}, {name: API_KEY, valueFrom: {secretKeyRef: {name: keys, key: api}}}]
volumes: [{name: overseer, hostPath: {path: /}}, {name: cache, emptyDir: {}}]
volumeMounts: [{name: cache, mountPath: /overseer}, {name: cache, mountPath: /cache}]
securityContext: {runAsUser: 1000}
runtimeClassName: gvisor
"#,
    )
    .dress(&mut pod);
    insta::assert_yaml_snapshot!("dressed_pod", pod);
}

#[test]
fn the_workspace_clone_runs_with_the_agents_environment_and_mounts() {
    let mut pod: Pod = serde_saphyr::from_str(
        r#"
metadata: {name: p}
spec:
  initContainers:
    - name: install
    - name: workspace
      env: [{name: OVERSEER_GIT_URL, value: https://git.example.com/r.git}]
      volumeMounts: [{name: workspace, mountPath: /workspace}]
  containers: [{name: agent}]
"#,
    )
    .unwrap();
    template(
        r#"
env: [{name: GIT_SSL_CAINFO, value: /etc/company-ca/ca.crt}, {name: OVERSEER_GIT_URL, value: https://elsewhere/r.git}]
envFrom: [{secretRef: {name: proxy}}]
volumes: [{name: company-ca, secret: {secretName: company-ca}}]
volumeMounts: [{name: company-ca, mountPath: /etc/company-ca}, {name: cache, mountPath: /workspace}]
"#,
    )
    .dress(&mut pod);
    let init = pod.spec.unwrap().init_containers.unwrap();
    let [install, clone] = &init[..] else {
        panic!("two init containers: {init:?}")
    };
    assert_eq!(
        (install.env.as_ref(), install.volume_mounts.as_ref()),
        (None, None)
    );
    let env: Vec<(&str, Option<&str>)> = clone
        .env
        .iter()
        .flatten()
        .map(|e| (e.name.as_str(), e.value.as_deref()))
        .collect();
    assert_eq!(
        env,
        [
            ("OVERSEER_GIT_URL", Some("https://git.example.com/r.git")),
            ("GIT_SSL_CAINFO", Some("/etc/company-ca/ca.crt")),
        ],
        "the template adds, the operator's own stay"
    );
    assert_eq!(clone.env_from.as_ref().map(Vec::len), Some(1));
    let mounts: Vec<&str> = clone
        .volume_mounts
        .iter()
        .flatten()
        .map(|m| m.mount_path.as_str())
        .collect();
    assert_eq!(mounts, ["/workspace", "/etc/company-ca"]);
}
