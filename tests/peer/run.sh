#!/usr/bin/env bash
# Peer test: the official e2b npm SDK (version pinned in package.json) against
# fake-e2b. Usage: tests/peer/run.sh <path to fake-e2b> [node --test args...]
# Installs the SDK and the CLI (idempotent; needs the npm registry once), then runs
# `node --test` in this directory with FAKE_E2B set.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fake=${1:-${FAKE_E2B:-}}
[ -n "$fake" ] || { echo "usage: $0 <fake-e2b path>" >&2; exit 2; }
shift || true
case "$fake" in /*) ;; *) fake=$PWD/$fake ;; esac
[ -x "$fake" ] || { echo "peer: $fake is not executable" >&2; exit 2; }
cd "$here"
# every pinned package at its version, else install (e2b, @e2b/cli)
stale=$(node -e "
const d = require('./package.json').dependencies
for (const [n, v] of Object.entries(d)) {
  let have = ''
  try { have = require('./node_modules/' + n + '/package.json').version } catch {}
  if (have !== v) { console.log(n); break }
}" 2>/dev/null || echo all)
if [ -n "$stale" ]; then
  npm install --no-audit --no-fund --loglevel=error
fi
export FAKE_E2B=$fake
exec node --test --test-reporter=spec "$@" ./*.test.mjs
