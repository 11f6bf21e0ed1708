#!/usr/bin/env bash
# Builds the real control plane the tests and `make start` run against, from
# k8s.io/kubernetes (hack/controlplane/go.mod pins the release), and links etcd from Debian's
# etcd-server package. Everything lands in a stable cache outside the clone
# ($KUBE_EXTENDER_CACHE, default ~/.cache/kube-extender), Go's module and build caches too, so
# a second run (or a fresh clone on the same machine) only checks.
#
#   bash hack/build-controlplane.sh [BINARY...]
#
# BINARY is kube-apiserver, kube-scheduler or kube-controller-manager (default: all three).
# `make start` asks for the first two (what the demo runs), `make test` for all three (the
# volume tests run kube-controller-manager's PV binder). The ones not up to date are built by
# ONE `go build`, so the packages they share (most of k8s.io/kubernetes) compile once and the
# two cores stay busy; hack/gobuild.py shows its progress.
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

up_to_date() { [[ -x "$bin/$1" && "$(cat "$bin/$1.stamp" 2>/dev/null)" == "$stamp" ]]; }

build() {
  local todo=() name
  for name in "$@"; do
    [[ -f "$here/controlplane/$name/main.go" ]] || { log "$name: unknown (hack/controlplane/*/)"; exit 2; }
    if up_to_date "$name"; then
      log "$name: up to date ($bin/$name)"
    else
      todo+=("$name")
    fi
  done
  ((${#todo[@]})) || return 0
  command -v go >/dev/null || { log "go: not found on PATH; the build needs Go >= 1.26"; exit 1; }
  log "building ${todo[*]} with one go build (kube-apiserver and kube-scheduler from cold:" \
    "about 500 s of CPU, some 10 minutes on 2 cores; Go's caches: $cache) ..."
  local start=$SECONDS out="$bin/.build.$$" pkgs=()
  for name in "${todo[@]}"; do pkgs+=("./$name"); done
  rm -rf "$out"
  mkdir -p "$out"
  # -s -w: no symbol table or DWARF (stack traces keep working): shorter links, which run
  # after everything is compiled, and binaries a third smaller (kube-apiserver 105 MB, not 150).
  (cd "$here/controlplane" && python3 "$here/gobuild.py" --label controlplane \
    -trimpath "-ldflags=-s -w" -o "$out/" "${pkgs[@]}") || { rm -rf "$out"; exit 1; }
  for name in "${todo[@]}"; do
    mv "$out/$name" "$bin/$name"
    echo "$stamp" >"$bin/$name.stamp"
  done
  rm -rf "$out"
  log "${todo[*]}: built in $((SECONDS - start)) s"
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

total=$SECONDS
etcd_binary
if (($#)); then
  build "$@"
else
  build kube-apiserver kube-scheduler kube-controller-manager
fi
log "done in $((SECONDS - total)) s: $bin"
