#!/usr/bin/env bash
# Builds the helm CLI (helm.sh/helm/v4, pinned by hack/helm/go.mod's `tool` line) that
# tests/unit/test_helm_chart.py and tests/e2e/test_helm_chart.py render the chart with.
# Lands in the same stable cache as the control plane ($KUBE_EXTENDER_CACHE, default
# ~/.cache/kube-extender), keyed by go.mod/go.sum: a second run only checks.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
cache="${KUBE_EXTENDER_CACHE:-$HOME/.cache/kube-extender}"
bin="$cache/bin"
mkdir -p "$bin"
export GOMODCACHE="$cache/gomod" GOCACHE="$cache/gobuild" GOFLAGS=-mod=mod

log() { printf '[helm] %s\n' "$*" >&2; }

# Relative paths: the stamp must not depend on where the clone lives (CI clones anew).
stamp="$(cd "$here" && sha256sum helm/go.mod helm/go.sum | sha256sum | cut -c1-16)"
if [[ -x "$bin/helm" && "$(cat "$bin/helm.stamp" 2>/dev/null)" == "$stamp" ]]; then
  log "helm: up to date ($bin/helm)"
  exit 0
fi
command -v go >/dev/null || { log "go: not found on PATH; the build needs Go >= 1.26"; exit 1; }
log "helm: building (only make test needs it; cold on 2 cores: about 5 minutes) ..."
start=$SECONDS
(cd "$here/helm" && python3 "$here/gobuild.py" --label helm \
  -trimpath "-ldflags=-s -w" -o "$bin/helm.tmp" helm.sh/helm/v4/cmd/helm)
mv "$bin/helm.tmp" "$bin/helm"
echo "$stamp" >"$bin/helm.stamp"
log "helm: built in $((SECONDS - start)) s ($("$bin/helm" version --short))"
