#!/usr/bin/env bash
# bench/h2_multiplex.test.sh FAKE BENCH_C: over HTTPS the library multiplexes
# concurrent calls as HTTP/2 streams of one connection where the server offers
# h2 by ALPN (src/e2b/http_loop.c; README.md "Where E2B is: TLS, HTTP/2, 20
# and 80 ms away"), opens another connection beyond the server's stream cap,
# and keeps HTTP/1.1 (a connection per concurrent call) where h2 is not
# offered. fake-e2b speaks HTTP/1.1 only, so bench/relay.mjs
# --h2 stands in front of it as E2B's edge would. N execs are in flight at
# once for certain: each waits in the sandbox until all N have started
# (bench_c --barrier). Needs root (a private mount namespace for the CA).
set -euo pipefail
fake=$(realpath "$1") benchc=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib/fake.sh
. "$here/lib/fake.sh"
# shellcheck source=bench/lib/relay.sh
. "$here/lib/relay.sh"
# shellcheck source=bench/lib/certs.sh
. "$here/lib/certs.sh"
work=$(mktemp -d /tmp/sbx-h2.XXXXXX)
cleanup() {
  relay_stop
  fake_stop
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
certs_make "$work" sbx-h2-ca IP:127.0.0.1
fake_start "$fake" "$work"
hp=${url#http://}
hp=${hp%%/*}
n=12
fails=0
# run NAME WANT RELAY-ARGS...: N barrier execs through a fresh relay; WANT is a regular
# expression for the relay's closing lines, joined by ';' (two groups, if any, must be equal)
run() {
  local name=$1 want=$2 port got
  shift 2
  relay_start "$work" "$hp" --rtt 0 --tls-cert srv.pem --tls-key srv.key "$@"
  port=$relay_port
  if ! unshare -m sh -c 'mount --bind "$0" /etc/ssl/certs && exec "$@"' "$work/certs" \
    "$benchc" --url "https://127.0.0.1:$port" --admin "$url" --scenario b --count $n --barrier \
    >"$name.out" 2>"$name.err"; then
    echo "FAIL $name: bench_c failed: $(tail -3 "$name.err")"; fails=1
  elif ! grep -q '"ok":true' "$name.out"; then
    echo "FAIL $name: $(cat "$name.out")"; fails=1
  fi
  relay_stop
  got=$(grep -E '^relay (connections|h2) ' relay.out | sed 's/ streams [0-9]*//' | tr '\n' ';')
  if [[ "$got" =~ ^$want$ ]] && [ "${BASH_REMATCH[1]:-}" = "${BASH_REMATCH[2]:-}" ]; then
    echo "ok $name: $got"
  else
    echo "FAIL $name: relay said '$got', want '$want'"; fails=1
  fi
}
# h2 offered: setup (create and the same-name list at once), the N execs and the teardown
# all on one connection
run h2 "relay connections 1;relay h2 connections 1 most-at-once $n http1 connections 0;" --h2
# a server cap of 5 streams per connection: never a 6th stream on one; beyond the cap the
# loop lets one call open another connection and holds the others until it is up (curl 7.88
# alone opens one per call arriving meanwhile: 8 here): ceil(12/5) = 3 connections, one more
# when a call is placed before the new connection's SETTINGS arrive
run h2cap5 "relay connections ([34]);relay h2 connections ([34]) most-at-once 5 http1 connections 0;" \
  --h2 --max-streams 5
# HTTP/1.1 only: a connection per call in flight, as before
run http1 "relay connections $n;"
exit $fails
