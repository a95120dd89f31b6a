#!/usr/bin/env bash
# Builds the local control plane (kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl, etcd, kwok, kwokctl, helm, helm4, kstatus) and the real node's kubelet and kube-proxy from their Go modules at
# the versions pinned in versions.env, into a cache outside the repository keyed
# by those versions. A second run finds the cache and builds nothing.
# Prints the cache's bin directory on the last line of stdout.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

cache_root="${OVERSEER_TESTENV_CACHE:-$HOME/.cache/overseer-testenv}"
key="k8s-${KUBE_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}_helm-${HELM_VERSION}_helm4-${HELM4_VERSION}_cli-utils-${CLI_UTILS_VERSION}"
out="$cache_root/$key/bin"
kube_binaries=(kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy)
binaries=("${kube_binaries[@]}" etcd kwok kwokctl helm helm4 kstatus)

log() { echo "testenv: $*" >&2; }

bash "$here/packages.sh"

stages="$cache_root/$key/stages"
# kwok's default node and pod Stages: a cluster given any Stage of its own needs them too.
default_stages=(node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml
  pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml)

all_built() {
  local b
  for b in "${binaries[@]}"; do [ -x "$out/$b" ] || return 1; done
  [ "$(ls "$stages" 2>/dev/null | wc -l)" -eq "${#default_stages[@]}" ]
}

if all_built; then
  log "cache hit: $out"
  echo "$out"
  exit 0
fi

# shellcheck source=go.sh
source "$here/go.sh"
ensure_go
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod
mkdir -p "$out"
work="$cache_root/$key/src"
mkdir -p "$work"

build_kube() {
  local mod="$work/kube" minor="${KUBE_VERSION#*.}"; minor="${minor%%.*}"
  local staging=(api apiextensions-apiserver apimachinery apiserver cli-runtime client-go
    cloud-provider cluster-bootstrap code-generator component-base component-helpers
    controller-manager cri-api cri-client cri-streaming csi-translation-lib
    dynamic-resource-allocation endpointslice externaljwt kms kube-aggregator
    kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics mount-utils
    pod-security-admission streaming)
  mkdir -p "$mod"
  {
    echo "module overseer.dev/testenv/kube"
    echo
    echo "go 1.26.0"
    echo
    echo "require k8s.io/kubernetes v${KUBE_VERSION}"
    echo
    echo "replace ("
    local s
    for s in "${staging[@]}"; do echo "	k8s.io/$s => k8s.io/$s v0.${KUBE_VERSION#*.}"; done
    echo ")"
  } >"$mod/go.mod"
  cat >"$mod/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
)
GO
  local ld="" p
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $p.gitVersion=v${KUBE_VERSION} -X $p.gitMajor=1 -X $p.gitMinor=${minor}"
    ld+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  log "building Kubernetes v${KUBE_VERSION} (${kube_binaries[*]})"
  (cd "$mod" && "$GO" mod tidy -e >&2 2>&1 && \
    "$GO" build -trimpath -tags selinux,notest -ldflags "-s -w$ld" -o "$out/" \
      "${kube_binaries[@]/#/k8s.io/kubernetes/cmd/}" >&2)
}

build_etcd() {
  local mod="$work/etcd"
  mkdir -p "$mod"
  cat >"$mod/go.mod" <<GOMOD
module overseer.dev/testenv/etcd

go 1.26.0

require go.etcd.io/etcd/server/v3 v${ETCD_VERSION}
GOMOD
  cat >"$mod/tools.go" <<'GO'
//go:build tools

package tools

import _ "go.etcd.io/etcd/server/v3"
GO
  log "building etcd v${ETCD_VERSION}"
  (cd "$mod" && "$GO" mod tidy -e >&2 2>&1 && \
    "$GO" build -trimpath -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3 >&2)
}

build_kwok() {
  log "building kwok and kwokctl v${KWOK_VERSION}"
  GOBIN="$out" "$GO" install -trimpath -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=v${KWOK_VERSION}" \
    "sigs.k8s.io/kwok/cmd/kwok@v${KWOK_VERSION}" "sigs.k8s.io/kwok/cmd/kwokctl@v${KWOK_VERSION}" >&2
}

copy_default_stages() {
  local src="$("$GO" env GOMODCACHE)/sigs.k8s.io/kwok@v${KWOK_VERSION}/kustomize/stage" f
  [ -d "$src" ] || "$GO" mod download "sigs.k8s.io/kwok@v${KWOK_VERSION}" >&2
  mkdir -p "$stages"
  for f in "${default_stages[@]}"; do cp "$src/$f" "$stages/"; done
}

build_helm() {
  local minor="${KUBE_VERSION#*.}"; minor="${minor%%.*}"
  log "building helm v${HELM_VERSION}"
  GOBIN="$out" "$GO" install -trimpath -ldflags "-s -w \
    -X helm.sh/helm/v3/internal/version.version=v${HELM_VERSION} \
    -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 \
    -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=${minor} \
    -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 \
    -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=${minor}" \
    "helm.sh/helm/v3/cmd/helm@v${HELM_VERSION}" >&2
}

build_helm4() {
  local mod="$work/helm4"
  mkdir -p "$mod"
  printf 'module overseer.dev/testenv/helm4\n\ngo 1.26.0\n\nrequire helm.sh/helm/v4 v%s\n' \
    "$HELM4_VERSION" >"$mod/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "helm.sh/helm/v4/cmd/helm"\n' >"$mod/tools.go"
  log "building helm v${HELM4_VERSION} (as helm4)"
  (cd "$mod" && "$GO" mod tidy -e >&2 2>&1 && \
    "$GO" build -trimpath -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=v${HELM4_VERSION}" \
      -o "$out/helm4" helm.sh/helm/v4/cmd/helm >&2)
}

build_kstatus() {
  local mod="$work/kstatus"
  mkdir -p "$mod"
  cp "$here/kstatus/main.go" "$mod/main.go"
  printf 'module overseer.dev/testenv/kstatus\n\ngo 1.26.0\n\nrequire sigs.k8s.io/cli-utils v%s\n' \
    "$CLI_UTILS_VERSION" >"$mod/go.mod"
  log "building kstatus (sigs.k8s.io/cli-utils v${CLI_UTILS_VERSION})"
  (cd "$mod" && "$GO" mod tidy -e >&2 2>&1 && "$GO" build -trimpath -ldflags "-s -w" -o "$out/kstatus" . >&2)
}

kube_built() {
  local b
  for b in "${kube_binaries[@]}"; do [ -x "$out/$b" ] || return 1; done
}
kube_built || build_kube
[ -x "$out/etcd" ] || build_etcd
[ -x "$out/kwok" ] && [ -x "$out/kwokctl" ] || build_kwok
[ -x "$out/helm" ] || build_helm
[ -x "$out/helm4" ] || build_helm4
[ -x "$out/kstatus" ] || build_kstatus
copy_default_stages

all_built || { log "build incomplete in $out"; exit 1; }
log "built into $out"
echo "$out"
