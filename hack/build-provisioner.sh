#!/usr/bin/env bash
# Builds the dynamic provisioner the volume tests run (tests/e2e/test_volumes.py): a hostpath
# provisioner on sigs.k8s.io/sig-storage-lib-external-provisioner/v13 (hack/provisioner/go.mod
# pins the release). Its own module, since the library pins a newer client-go than the control
# plane's k8s.io/kubernetes. Lands in the same cache as hack/build-controlplane.sh, keyed the
# same way: a changed go.mod, go.sum or main.go rebuilds it.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
cache="${KUBE_EXTENDER_CACHE:-$HOME/.cache/kube-extender}"
bin="$cache/bin"
mkdir -p "$bin"
export GOMODCACHE="$cache/gomod" GOCACHE="$cache/gobuild" GOFLAGS=-mod=mod

log() { printf '[provisioner] %s\n' "$*" >&2; }

command -v go >/dev/null || { log "go: not found on PATH; the build needs Go >= 1.26"; exit 1; }
# Relative paths: the stamp must not depend on where the clone lives (CI clones anew).
stamp="$(cd "$here" && sha256sum provisioner/go.mod provisioner/go.sum provisioner/*/main.go \
  | sha256sum | cut -c1-16)"
name=hostpath-provisioner
if [[ -x "$bin/$name" && "$(cat "$bin/$name.stamp" 2>/dev/null)" == "$stamp" ]]; then
  log "$name: up to date ($bin/$name)"
  exit 0
fi
log "$name: building (only make test needs it; cold on 2 cores: about 4 minutes) ..."
start=$SECONDS
(cd "$here/provisioner" && python3 "$here/gobuild.py" --label provisioner \
  -trimpath "-ldflags=-s -w" -o "$bin/$name.tmp" "./$name")
mv "$bin/$name.tmp" "$bin/$name"
echo "$stamp" >"$bin/$name.stamp"
log "$name: built in $((SECONDS - start)) s"
