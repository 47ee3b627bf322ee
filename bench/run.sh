#!/usr/bin/env bash
# Benchmark (issues 6, 13): C library vs the official e2b SDK against one fake-e2b.
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
smoke=0 rounds= only=abcdefg fake= benchc= rtts= tls=1 h2=1
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

# bench_smoke, bench_smoke_rtt and bench_smoke_pkg may start together (ctest -j2) on a fresh
# clone: one npm install at a time in bench/node, the others find it done.
(cd "$here/node"
 exec 9>"${TMPDIR:-/tmp}/sandbox-e2b-bench-npm.lock" && flock 9
 want=$(node -p "require('./package.json').dependencies.e2b")
 have=$(node -p "try{require('./node_modules/e2b/package.json').version}catch{''}" 2>/dev/null || true)
 [ "$have" = "$want" ] || npm install --no-audit --no-fund --loglevel=error >&2)

work=$(mktemp -d /tmp/sbx-bench.XXXXXX)
fakepid= relaypid=
stop_relay() {
  if [ -n "$relaypid" ]; then
    kill -TERM "$relaypid" 2>/dev/null || true
    wait "$relaypid" 2>/dev/null || true
    relaypid=
  fi
}
cleanup() {
  stop_relay
  if [ -n "$fakepid" ]; then
    kill -TERM "$fakepid" 2>/dev/null || true
    wait "$fakepid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# the file exists before the server starts: the redirection below happens in the child,
# which the loop may outrun (sed on a missing file failed the run under set -e)
: >"$work/fake.out"
"$fake" --port 0 --quiet --api-key e2b_bench >>"$work/fake.out" 2>"$work/fake.err" &
fakepid=$!
url=
for _ in $(seq 300); do
  url=$(sed -n 's/^fake-e2b listening on \(http:[^ ]*\).*/\1/p' "$work/fake.out" || true)
  [ -n "$url" ] && break
  kill -0 "$fakepid" 2>/dev/null || { cat "$work/fake.err" >&2; echo "bench: fake-e2b died" >&2; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { echo "bench: fake-e2b did not start" >&2; exit 1; }
echo "bench: fake-e2b at $url, $rounds round(s), scenarios $only$([ $smoke = 1 ] && echo ' (smoke)')" >&2
admin=$url

# Latency mode over TLS: a throwaway CA and server certificate for 127.0.0.1.
# Node trusts it through NODE_EXTRA_CA_CERTS; bench_c runs in a private mount
# namespace where /etc/ssl/certs also holds it (libcurl reads the system store).
cexec=()
if [ -n "$rtts" ] && [ $tls = 1 ]; then
  (cd "$work"
   openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=sbx-bench-ca -keyout ca.key -out ca.pem \
     -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign >/dev/null 2>&1
   openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout srv.key -out srv.csr >/dev/null 2>&1
   printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >srv.ext
   openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile srv.ext \
     -out srv.pem >/dev/null 2>&1
   mkdir certs && cat /etc/ssl/certs/ca-certificates.crt ca.pem >certs/ca-certificates.crt
   cp ca.pem certs/sbx-bench-ca.pem && openssl rehash certs >/dev/null 2>&1) ||
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
  # issue 13: the library's execs are one request each in steady state (no connect before
  # each: the attach cache), like the SDK's; a run that sends more fails the bench
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
    : >"$work/relay.out" # exists before the child opens it, as fake.out above
    node "$here/relay.mjs" --target "$hostport" --rtt "$rtt" "${tlsargs[@]}" >>"$work/relay.out" 2>"$work/relay.err" &
    relaypid=$!
    port=
    for _ in $(seq 100); do
      port=$(sed -n 's/^relay listening on \([0-9]*\)$/\1/p' "$work/relay.out")
      [ -n "$port" ] && break
      sleep 0.1
    done
    [ -n "$port" ] || { cat "$work/relay.err" >&2; echo "bench: relay did not start" >&2; exit 1; }
    url=$([ $tls = 1 ] && echo https || echo http)://127.0.0.1:$port
    echo "bench: RTT $rtt ms through $url" >&2
    proto=$([ $tls = 0 ] && echo plain HTTP || { [ $h2 = 1 ] && echo 'TLS, HTTP/2 offered' || echo 'TLS, HTTP/1.1 only'; })
    table "RTT $rtt ms, $proto: C library vs e2b@$sdkv SDK"
    stop_relay
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
