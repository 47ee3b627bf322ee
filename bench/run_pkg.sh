#!/usr/bin/env bash
# Package benchmark (bench/README.md "Node package vs the SDK"): the Node
# package (bindings/node over `sandbox-e2b serve`) vs the official e2b SDK
# (bench/node, e2b pinned) on one fake-e2b, A B alternating:
#
#   bench/run_pkg.sh [--smoke] [--rounds N] [--fake PATH] [--bin PATH]
#
# Scenarios: a = 200 sequential `true` execs, e = 256 concurrent `sleep 2`
# execs (--smoke: 5 and 8 x `sleep 0.2`, 1 round). Prints each run's JSON line
# and a table of medians: Node CPU per exec, wall, peak RSS (package: Node +
# the serve child) and the ratios package / SDK.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib/fake.sh
. "$here/lib/fake.sh"
# shellcheck source=bench/lib/node_deps.sh
. "$here/lib/node_deps.sh"
smoke=0 rounds="" fake="" bin=""
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) smoke=1 ;;
    --rounds) rounds=$2; shift ;;
    --fake) fake=$2; shift ;;
    --bin) bin=$2; shift ;;
    -h|--help) sed -n '2,12p' "$0" | cut -c3-; exit 0 ;;
    *) echo "run_pkg: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$rounds" ] || rounds=$([ $smoke = 1 ] && echo 1 || echo 3)
build=${BUILD_DIR:-$root/build}
fake=${fake:-$build/fake-e2b/fake-e2b}
bin=${bin:-$build/cli/sandbox-e2b}
export SANDBOX_E2B_BIN=$bin
declare -A ARGS
if [ $smoke = 1 ]; then ARGS=([a]="--count 5" [e]="--count 8 --sleep 0.2")
else ARGS=([a]="--count 200" [e]="--count 256 --sleep 2"); fi

node_deps_install

work=$(mktemp -d /tmp/sbx-bench-pkg.XXXXXX)
cleanup() {
  fake_stop
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fake_start "$fake" "$work" --state-dir "$work/state" --ephemeral ||
  { echo "run_pkg: fake-e2b did not start" >&2; exit 1; }

results=$work/results.jsonl
: >"$results"
for r in $(seq "$rounds"); do
  for s in a e; do
    for impl in pkg sdk; do
      prog=$([ $impl = pkg ] && echo bench_pkg.mjs || echo bench.mjs)
      # shellcheck disable=SC2086
      out=$(cd "$here/node" && timeout 900 node "$prog" --url "$url" --scenario "$s" ${ARGS[$s]} 2>>"$work/client.err" | grep '^{' | tail -1) || true
      [ -n "$out" ] || out="{\"impl\":\"$impl\",\"scenario\":\"$s\",\"ok\":false}"
      echo "$out" >>"$results"
      echo "  round $r $impl $s: $out" >&2
    done
  done
done
node - "$results" "${ARGS[a]}" "${ARGS[e]}" <<'JS'
const fs = require('node:fs')
const rows = fs.readFileSync(process.argv[2], 'utf8').trim().split('\n').map((l) => JSON.parse(l))
const med = (xs) => { const s = [...xs].sort((x, y) => x - y); return s.length ? s[Math.floor((s.length - 1) / 2)] : NaN }
const n = { a: Number(/--count (\d+)/.exec(process.argv[3])[1]), e: Number(/--count (\d+)/.exec(process.argv[4])[1]) }
console.log('| scenario | figure | package (Node + serve) | e2b SDK | package / SDK |')
console.log('|---|---|---|---|---|')
for (const s of ['a', 'e']) {
  const pk = rows.filter((r) => r.scenario === s && r.impl === 'pkg' && r.ok)
  const sd = rows.filter((r) => r.scenario === s && r.impl === 'sdk' && r.ok)
  const line = (name, fp, fs2, unit, digits = 2) => {
    const x = med(pk.map(fp)), y = med(sd.map(fs2))
    console.log(`| ${s} (${n[s]}) | ${name} | ${x.toFixed(digits)} ${unit} | ${y.toFixed(digits)} ${unit} | ${(x / y).toFixed(2)} |`)
  }
  line('Node CPU per exec', (r) => r.cpu_ms / n[s], (r) => r.cpu_ms / n[s], 'ms', 3)
  line('serve child CPU per exec (not in the ratio above)', (r) => r.child_cpu_ms / n[s], () => NaN, 'ms', 3)
  line('wall', (r) => r.wall_ms, (r) => r.wall_ms, 'ms', 0)
  line('peak RSS', (r) => r.total_rss_kb / 1024, (r) => r.rss_kb / 1024, 'MiB', 1)
}
const bad = rows.filter((r) => !r.ok).length
if (bad) { console.log(`\n${bad} run(s) failed`); process.exitCode = 1 }
JS
