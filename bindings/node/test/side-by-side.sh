#!/usr/bin/env bash
# The side-by-side test (side-by-side.test.mjs): installs the official e2b SDK pinned in
# tests/peer/package.json there (idempotent; needs the npm registry once), exactly as
# tests/peer/run.sh does, then runs the test with FAKE_E2B and SANDBOX_E2B_BIN from ctest.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
peer=$here/../../../tests/peer
cd "$peer"
want=$(node -p "require('./package.json').dependencies.e2b")
have=$(node -p "try{require('./node_modules/e2b/package.json').version}catch{''}" 2>/dev/null || true)
if [ "$have" != "$want" ]; then
  npm install --no-audit --no-fund --loglevel=error
fi
cd "$here/.."
exec node --test --test-reporter=spec test/side-by-side.test.mjs
