# shellcheck shell=bash
# bench/lib/node_deps.sh (sourced): the SDK side's npm packages (bench/node, e2b pinned).
#
#   node_deps_install  npm install in bench/node unless node_modules has the pinned e2b already.
#                      bench_smoke, bench_smoke_rtt and bench_smoke_pkg may start together
#                      (ctest -j2) on a fresh clone: one install at a time, the others find it
#                      done.

node_deps_install() {
  (cd "$(dirname "${BASH_SOURCE[0]}")/../node" &&
    exec 9>"${TMPDIR:-/tmp}/sandbox-e2b-bench-npm.lock" && flock 9 &&
    want=$(node -p "require('./package.json').dependencies.e2b") &&
    have=$(node -p "try{require('./node_modules/e2b/package.json').version}catch{''}" 2>/dev/null || true) &&
    { [ "$have" = "$want" ] || npm install --no-audit --no-fund --loglevel=error >&2; })
}
