#!/usr/bin/env bash
# Run the whole test suite: install dependencies, configure, build with
# warnings as errors, run every ctest (unit, fake-e2b, integration, CLI, peer,
# benchmark smoke; live tests report skipped without E2B credentials).
#
#   BUILD_DIR=...   build directory (default: build)
#   CMAKE_ARGS=...  extra configure arguments (e.g. -DSBX_SANITIZE=ON)
#   CTEST_ARGS=...  extra ctest arguments (e.g. -E 'peer|bench')
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
case "$build" in /*) ;; *) build=$root/$build ;; esac

bash "$root/scripts/install-deps.sh"
# shellcheck disable=SC2086
cmake -S "$root" -B "$build" -DSBX_WERROR=ON ${CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j"$(nproc)"
# shellcheck disable=SC2086
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" --timeout 900 ${CTEST_ARGS:-}
