#!/usr/bin/env bash
# tsc --strict --noEmit over check.ts (the package's index.d.ts). Installs the
# pinned typescript and @types/node here first (idempotent; needs the npm
# registry once), as tests/peer/run.sh does for the e2b SDK.
set -euo pipefail
cd "$(dirname "$0")"
want=$(node -p "require('./package.json').devDependencies.typescript")
have=$(node -p "try{require('./node_modules/typescript/package.json').version}catch{''}" 2>/dev/null || true)
if [ "$have" != "$want" ] || [ ! -d node_modules/@types/node ]; then
  npm install --no-audit --no-fund --loglevel=error
fi
exec node node_modules/typescript/bin/tsc -p tsconfig.json
