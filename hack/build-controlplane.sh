#!/usr/bin/env bash
# Builds the real control plane the tests and `make start` run against:
# kube-apiserver, kube-scheduler and kube-controller-manager from k8s.io/kubernetes
# (hack/controlplane/go.mod pins the
# release), and etcd from Debian's etcd-server package. Everything lands in a stable cache
# outside the clone ($KUBE_EXTENDER_CACHE, default ~/.cache/kube-extender), Go's module and
# build caches too, so a second run (or a fresh clone on the same machine) only checks.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
cache="${KUBE_EXTENDER_CACHE:-$HOME/.cache/kube-extender}"
bin="$cache/bin"
mkdir -p "$bin"
export GOMODCACHE="$cache/gomod" GOCACHE="$cache/gobuild" GOFLAGS=-mod=mod

log() { printf '[controlplane] %s\n' "$*" >&2; }

# The binaries are keyed by go.mod's content: a changed pin rebuilds them.
# Relative paths: the stamp must not depend on where the clone lives (CI clones anew).
stamp="$(cd "$here" && sha256sum controlplane/go.mod controlplane/go.sum controlplane/*/main.go \
  | sha256sum | cut -c1-16)"

build() {
  local name="$1"
  if [[ -x "$bin/$name" && "$(cat "$bin/$name.stamp" 2>/dev/null)" == "$stamp" ]]; then
    log "$name: up to date ($bin/$name)"
    return
  fi
  log "$name: building (a cold build takes about 10 minutes on 2 cores) ..."
  local start=$SECONDS
  (cd "$here/controlplane" && go build -trimpath -o "$bin/$name.tmp" "./$name")
  mv "$bin/$name.tmp" "$bin/$name"
  echo "$stamp" >"$bin/$name.stamp"
  log "$name: built in $((SECONDS - start)) s"
}

etcd_binary() {
  if [[ -x "$bin/etcd" ]]; then
    log "etcd: up to date ($bin/etcd)"
    return
  fi
  if ! command -v etcd >/dev/null 2>&1 && [[ ! -x /usr/bin/etcd ]]; then
    log "etcd: installing Debian's etcd-server ..."
    if [[ $(id -u) -eq 0 ]]; then
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q etcd-server >&2 \
        || { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q etcd-server >&2; }
    else
      log "etcd: not found; install Debian's etcd-server (apt-get install etcd-server) and re-run"
      exit 1
    fi
  fi
  ln -sf "$(command -v etcd || echo /usr/bin/etcd)" "$bin/etcd"
  log "etcd: $("$bin/etcd" --version | head -1)"
}

command -v go >/dev/null || { log "go: not found on PATH; the build needs Go >= 1.26"; exit 1; }
total=$SECONDS
etcd_binary
build kube-apiserver
build kube-scheduler
# The PersistentVolume binder for the volume tests (tests/e2e/test_volumes.py).
build kube-controller-manager
log "done in $((SECONDS - total)) s: $bin"
