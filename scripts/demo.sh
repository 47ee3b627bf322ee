#!/usr/bin/env bash
# Quick start: install dependencies, build, and run the demo. Without E2B
# credentials (E2B_API_KEY + E2B_TEMPLATE, or SANDBOX_E2B_CONFIG) the demo
# starts the local fake-e2b server itself and stops it afterwards.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
case "$build" in /*) ;; *) build=$root/$build ;; esac

bash "$root/scripts/install-deps.sh"
cmake -S "$root" -B "$build" -DSBX_WERROR=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
exec "$build/cli/sandbox-e2b" demo "$@"
