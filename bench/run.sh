#!/usr/bin/env bash
# Benchmark (issue 6): C library vs the official e2b SDK against one fake-e2b.
#
#   bench/run.sh [--smoke] [--rounds N] [--only abcdef] [--fake PATH] [--bench-c PATH]
#
# Runs every scenario, alternating the C program (bench_c) and the Node
# program (node/bench.mjs, npm e2b pinned in node/package.json) A B A B over
# N rounds (default 5; --smoke: tiny sizes, 1 round), each run a fresh
# process, then prints a markdown table (bench/report.mjs). Without --fake /
# --bench-c it builds them with cmake in $BUILD_DIR (default <repo>/build).
# Exit status: non-zero when any run failed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
smoke=0 rounds= only=abcdef fake= benchc=
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) smoke=1 ;;
    --rounds) rounds=$2; shift ;;
    --only) only=$2; shift ;;
    --fake) fake=$2; shift ;;
    --bench-c) benchc=$2; shift ;;
    -h|--help) sed -n '2,11p' "$0" | cut -c3-; exit 0 ;;
    *) echo "bench: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$rounds" ] || rounds=$([ $smoke = 1 ] && echo 1 || echo 5)

if [ -z "$fake" ] || [ -z "$benchc" ]; then
  build=${BUILD_DIR:-$root/build}
  cmake -S "$root" -B "$build" >/dev/null
  cmake --build "$build" -j"$(nproc)" --target fake-e2b bench_c >/dev/null
  fake=${fake:-$build/fake-e2b/fake-e2b}
  benchc=${benchc:-$build/bench/bench_c}
fi

# Scenario parameters, one source for both programs: name -> args.
declare -A ARGS
if [ $smoke = 1 ]; then
  ARGS=([a]="--count 5" [b]="--count 4 --sleep 0.2" [c]="--bytes 1048576 --cap 65536"
        [d]="--bytes 65536" [e]="--count 8 --sleep 0.2" [f]="--count 2")
else
  ARGS=([a]="--count 200" [b]="--count 64 --sleep 0.2" [c]="--bytes 104857600 --cap 1048576"
        [d]="--bytes 67108864" [e]="--count 256 --sleep 2" [f]="--count 20")
fi

(cd "$here/node"
 want=$(node -p "require('./package.json').dependencies.e2b")
 have=$(node -p "try{require('./node_modules/e2b/package.json').version}catch{''}" 2>/dev/null || true)
 [ "$have" = "$want" ] || npm install --no-audit --no-fund --loglevel=error >&2)

work=$(mktemp -d /tmp/sbx-bench.XXXXXX)
fakepid=
cleanup() {
  if [ -n "$fakepid" ]; then
    kill -TERM "$fakepid" 2>/dev/null || true
    wait "$fakepid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
"$fake" --port 0 --quiet >"$work/fake.out" 2>"$work/fake.err" &
fakepid=$!
url=
for _ in $(seq 300); do
  url=$(sed -n 's/^fake-e2b listening on \(http:[^ ]*\).*/\1/p' "$work/fake.out")
  [ -n "$url" ] && break
  kill -0 "$fakepid" 2>/dev/null || { cat "$work/fake.err" >&2; echo "bench: fake-e2b died" >&2; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { echo "bench: fake-e2b did not start" >&2; exit 1; }
echo "bench: fake-e2b at $url, $rounds round(s), scenarios $only$([ $smoke = 1 ] && echo ' (smoke)')" >&2

results=$work/results.jsonl
: >"$results"
one() { # impl scenario
  local impl=$1 s=$2 out rc=0
  # shellcheck disable=SC2086
  if [ "$impl" = c ]; then
    out=$(timeout 900 "$benchc" --url "$url" --scenario "$s" ${ARGS[$s]} 2>>"$work/client.err") || rc=$?
  else
    out=$(cd "$here/node" && timeout 900 node bench.mjs --url "$url" --scenario "$s" ${ARGS[$s]} 2>>"$work/client.err") || rc=$?
  fi
  out=$(printf '%s\n' "$out" | grep '^{' | tail -1 || true)
  if [ -z "$out" ]; then
    out="{\"impl\":\"$([ "$impl" = c ] && echo c || echo sdk)\",\"scenario\":\"$s\",\"ok\":false,\"note\":\"exit $rc, no figures\"}"
  fi
  echo "$out" >>"$results"
  echo "  round $r $impl $s: $out" >&2
}
for r in $(seq "$rounds"); do
  for s in a b c d e f; do
    case "$only" in *$s*) ;; *) continue ;; esac
    one c "$s"
    one node "$s"
  done
done

echo
echo "### sandbox-e2b benchmark: C library vs e2b@$(node -p "require('$here/node/node_modules/e2b/package.json').version") SDK"
echo
echo "fake-e2b on this machine ($(nproc) cores), $rounds round(s), A B alternating, $(date -u +%Y-%m-%dT%H:%MZ)."
echo "Sizes: $(for s in a b c d e f; do case "$only" in *$s*) printf '%s: %s; ' "$s" "${ARGS[$s]}" ;; esac; done)"
echo
node "$here/report.mjs" "$results"
if [ -s "$work/client.err" ]; then
  echo
  echo "client stderr (last lines):"
  tail -20 "$work/client.err" | sed 's/^/    /'
fi
if grep -q '"ok":false' "$results"; then exit 1; fi
