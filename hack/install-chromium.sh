#!/usr/bin/env bash
# Installs the browser the replay report's test drives (tests/e2e/test_replay_report.py):
# Debian's chromium package, only when it is missing. Playwright drives it by its path;
# `playwright install` (Playwright's own browser download) is never run.
#
#   bash hack/install-chromium.sh
#
# As root: apt-get install chromium, and when that fails (a stale package index) apt-get update
# and once more. Otherwise it says what to install and carries on: `make setup` serves the unit
# tests too, and the browser test fails with the same instruction.
set -euo pipefail

chromium="${KUBE_EXTENDER_CHROMIUM:-/usr/bin/chromium}"

log() { printf '[chromium] %s\n' "$*" >&2; }

if [[ -x "$chromium" ]]; then
  log "up to date ($chromium)"
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  log "$chromium: not found; install Debian's chromium (apt-get install chromium):" \
    "the replay report's browser test needs it"
  exit 0
fi
log "installing Debian's chromium ..."
DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >&2 \
  || { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >&2; }
if [[ ! -x "$chromium" ]]; then
  log "$chromium: still missing after apt-get install chromium"
  exit 1
fi
log "$("$chromium" --version 2>/dev/null | head -1)"
