#!/usr/bin/env bash
# Benchmark (bench/README.md): C library vs the official e2b SDK against one fake-e2b.
#
#   bench/run.sh [--smoke] [--rounds N] [--only abcdefg] [--rtt MS[,MS...]] [--plain] [--h1]
#                [--fake PATH] [--bench-c PATH]
#
# Runs every scenario, alternating the C program (bench_c) and the Node
# program (node/bench.mjs, npm e2b pinned in node/package.json) A B A B over
# N rounds (default 5; --smoke: tiny sizes, 1 round), each run a fresh
# process, then prints a markdown table (bench/report.mjs). Without --fake /
# --bench-c it builds them with cmake in $BUILD_DIR (default <repo>/build).
# --rtt: latency mode, one table per RTT: both clients reach fake-e2b through
# bench/relay.mjs (each direction delayed RTT/2) over TLS (a throwaway local
# CA; --plain: plain HTTP) whose front offers HTTP/2 by ALPN as E2B's does
# (--h1: HTTP/1.1 only). Exit status: non-zero when any run failed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib/fake.sh
. "$here/lib/fake.sh"
# shellcheck source=bench/lib/relay.sh
. "$here/lib/relay.sh"
# shellcheck source=bench/lib/certs.sh
. "$here/lib/certs.sh"
# shellcheck source=bench/lib/node_deps.sh
. "$here/lib/node_deps.sh"
smoke=0 rounds="" only=abcdefg fake="" benchc="" rtts="" tls=1 h2=1
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) smoke=1 ;;
    --rounds) rounds=$2; shift ;;
    --only) only=$2; shift ;;
    --rtt) rtts=$2; shift ;;
    --plain) tls=0 ;;
    --h1) h2=0 ;;
    --fake) fake=$2; shift ;;
    --bench-c) benchc=$2; shift ;;
    -h|--help) sed -n '2,15p' "$0" | cut -c3-; exit 0 ;;
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
        [d]="--bytes 65536" [e]="--count 8 --sleep 0.2" [f]="--count 2" [g]="--bytes 1048576")
else
  ARGS=([a]="--count 200" [b]="--count 64 --sleep 0.2" [c]="--bytes 104857600 --cap 1048576"
        [d]="--bytes 67108864" [e]="--count 256 --sleep 2" [f]="--count 20" [g]="--bytes 104857600")
fi

node_deps_install

work=$(mktemp -d /tmp/sbx-bench.XXXXXX)
cleanup() {
  relay_stop
  fake_stop
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fake_start "$fake" "$work" || { echo "bench: fake-e2b did not start" >&2; exit 1; }
echo "bench: fake-e2b at $url, $rounds round(s), scenarios $only$([ $smoke = 1 ] && echo ' (smoke)')" >&2
admin=$url

# Latency mode over TLS: a throwaway CA and server certificate for 127.0.0.1.
# Node trusts it through NODE_EXTRA_CA_CERTS; bench_c runs in a private mount
# namespace where /etc/ssl/certs also holds it (libcurl reads the system store).
cexec=()
if [ -n "$rtts" ] && [ $tls = 1 ]; then
  { certs_make "$work" sbx-bench-ca IP:127.0.0.1,DNS:localhost &&
    cp "$work/ca.pem" "$work/certs/sbx-bench-ca.pem" && openssl rehash "$work/certs" >/dev/null 2>&1; } ||
    { echo "bench: cannot make the TLS certificates" >&2; exit 1; }
  export NODE_EXTRA_CA_CERTS=$work/ca.pem
  cexec=(unshare -m sh -c 'mount --bind "$0" /etc/ssl/certs && exec "$@"' "$work/certs")
fi

results=$work/results.jsonl
one() { # impl scenario
  local impl=$1 s=$2 out rc=0
  # shellcheck disable=SC2086
  if [ "$impl" = c ]; then
    out=$(timeout 900 "${cexec[@]}" "$benchc" --url "$url" --admin "$admin" --scenario "$s" ${ARGS[$s]} 2>>"$work/client.err") || rc=$?
  else
    out=$(cd "$here/node" && timeout 900 node bench.mjs --url "$url" --admin "$admin" --scenario "$s" ${ARGS[$s]} 2>>"$work/client.err") || rc=$?
  fi
  out=$(printf '%s\n' "$out" | grep '^{' | tail -1 || true)
  if [ -z "$out" ]; then
    out="{\"impl\":\"$([ "$impl" = c ] && echo c || echo sdk)\",\"scenario\":\"$s\",\"ok\":false,\"note\":\"exit $rc, no figures\"}"
  fi
  echo "$out" >>"$results"
  echo "  round $r $impl $s: $out" >&2
}
failed=0
table() { # heading
  local r s
  : >"$results"
  for r in $(seq "$rounds"); do
    for s in a b c d e f g; do
      case "$only" in *$s*) ;; *) continue ;; esac
      one c "$s"
      one node "$s"
    done
  done
  echo
  echo "### $1"
  echo
  echo "fake-e2b on this machine ($(nproc) cores), $rounds round(s), A B alternating, $(date -u +%Y-%m-%dT%H:%MZ)."
  echo "Sizes: $(for s in a b c d e f g; do case "$only" in *$s*) printf '%s: %s; ' "$s" "${ARGS[$s]}" ;; esac; done)"
  echo
  node "$here/report.mjs" "$results"
  if grep -q '"ok":false' "$results"; then failed=1; fi
  # the library's execs are one request each in steady state (no connect before each: the
  # attach cache, docs/contract.md "Lifecycle"), like the SDK's; a run that sends more fails the bench
  if ! node -e '
    const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse)
    const bad = rows.filter((r) => r.impl === "c" && r.ok && "abe".includes(r.scenario) && r.requests !== r.ops)
    for (const r of bad) console.error(`bench: C scenario ${r.scenario}: ${r.requests} requests for ${r.ops} execs`)
    process.exit(bad.length ? 1 : 0)' "$results"; then
    failed=1
  fi
}
sdkv=$(node -p "require('$here/node/node_modules/e2b/package.json').version")
if [ -z "$rtts" ]; then
  table "sandbox-e2b benchmark: C library vs e2b@$sdkv SDK"
else
  hostport=${url#http://}
  hostport=${hostport%%/*}
  for rtt in ${rtts//,/ }; do
    tlsargs=()
    [ $tls = 1 ] && tlsargs=(--tls-cert "$work/srv.pem" --tls-key "$work/srv.key")
    [ $tls = 1 ] && [ $h2 = 1 ] && tlsargs+=(--h2)
    relay_start "$work" "$hostport" --rtt "$rtt" "${tlsargs[@]}" ||
      { echo "bench: relay did not start" >&2; exit 1; }
    port=$relay_port
    url=$([ $tls = 1 ] && echo https || echo http)://127.0.0.1:$port
    echo "bench: RTT $rtt ms through $url" >&2
    proto=$([ $tls = 0 ] && echo plain HTTP || { [ $h2 = 1 ] && echo 'TLS, HTTP/2 offered' || echo 'TLS, HTTP/1.1 only'; })
    table "RTT $rtt ms, $proto: C library vs e2b@$sdkv SDK"
    relay_stop
    echo
    h2line=$(sed -n 's/^relay h2 connections \([0-9]*\) streams \([0-9]*\) most-at-once \([0-9]*\) http1 connections \([0-9]*\)$/ (\1 HTTP\/2 carrying \2 streams, at most \3 at once on one; \4 HTTP\/1.1)/p' "$work/relay.out")
    echo "Relay: $(sed -n 's/^relay connections //p' "$work/relay.out") TCP connections accepted over the whole table$h2line."
  done
fi
if [ -s "$work/client.err" ]; then
  echo
  echo "client stderr (last lines):"
  tail -20 "$work/client.err" | sed 's/^/    /'
fi
exit $failed
