#!/usr/bin/env bash
# bench/h2_multiplex.test.sh FAKE BENCH_C: over HTTPS the library multiplexes
# concurrent calls as HTTP/2 streams of one connection where the server offers
# h2 by ALPN (src/e2b/http.c, issue 13), opens another connection beyond the
# server's stream cap, and keeps HTTP/1.1 (a connection per concurrent call)
# where h2 is not offered. fake-e2b speaks HTTP/1.1 only, so bench/relay.mjs
# --h2 stands in front of it as E2B's edge would. N execs are in flight at
# once for certain: each waits in the sandbox until all N have started
# (bench_c --barrier). Needs root (a private mount namespace for the CA).
set -euo pipefail
fake=$(realpath "$1") benchc=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/sbx-h2.XXXXXX)
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
  [ -n "$fakepid" ] && kill -TERM "$fakepid" 2>/dev/null && wait "$fakepid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=sbx-h2-ca -keyout ca.key -out ca.pem \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign >/dev/null 2>&1
openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout srv.key -out srv.csr >/dev/null 2>&1
printf 'subjectAltName=IP:127.0.0.1\n' >srv.ext
openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile srv.ext \
  -out srv.pem >/dev/null 2>&1
mkdir certs && cat /etc/ssl/certs/ca-certificates.crt ca.pem >certs/ca-certificates.crt
# each output file exists before its child opens it: the redirection happens in the child,
# which the polling loop may outrun (sed on a missing file ends the script under set -e)
: >fake.out
"$fake" --port 0 --quiet --api-key e2b_bench >>fake.out 2>fake.err &
fakepid=$!
url=
for _ in $(seq 300); do
  url=$(sed -n 's/^fake-e2b listening on \(http:[^ ]*\).*/\1/p' fake.out)
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "fake-e2b did not start"; exit 1; }
hp=${url#http://}
hp=${hp%%/*}
n=12
fails=0
# run NAME WANT RELAY-ARGS...: N barrier execs through a fresh relay; WANT is a regular
# expression for the relay's closing lines, joined by ';' (two groups, if any, must be equal)
run() {
  local name=$1 want=$2 port= got
  shift 2
  : >relay.out
  node "$here/relay.mjs" --target "$hp" --rtt 0 --tls-cert srv.pem --tls-key srv.key "$@" >>relay.out 2>&1 &
  relaypid=$!
  for _ in $(seq 100); do
    port=$(sed -n 's/^relay listening on \([0-9]*\)$/\1/p' relay.out)
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || { echo "relay did not start: $(cat relay.out)"; exit 1; }
  if ! unshare -m sh -c 'mount --bind "$0" /etc/ssl/certs && exec "$@"' "$work/certs" \
    "$benchc" --url "https://127.0.0.1:$port" --admin "$url" --scenario b --count $n --barrier \
    >"$name.out" 2>"$name.err"; then
    echo "FAIL $name: bench_c failed: $(tail -3 "$name.err")"; fails=1
  elif ! grep -q '"ok":true' "$name.out"; then
    echo "FAIL $name: $(cat "$name.out")"; fails=1
  fi
  stop_relay
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
