#!/usr/bin/env bash
# bench/tls_verify.test.sh FAKE BENCH_C: the library verifies TLS peers against
# the system CAs it loads once per provider (src/e2b/http.c, issue 13): a server
# whose CA is not trusted is refused, the same server is accepted once its CA is
# in the system store (a private mount namespace, as bench/run.sh --rtt does).
set -euo pipefail
fake=$(realpath "$1") benchc=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/sbx-tlsv.XXXXXX)
fakepid= relaypid=
cleanup() {
  [ -n "$relaypid" ] && kill -TERM "$relaypid" 2>/dev/null && wait "$relaypid" 2>/dev/null
  [ -n "$fakepid" ] && kill -TERM "$fakepid" 2>/dev/null && wait "$fakepid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=sbx-tlsv-ca -keyout ca.key -out ca.pem \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign >/dev/null 2>&1
openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout srv.key -out srv.csr >/dev/null 2>&1
printf 'subjectAltName=IP:127.0.0.1\n' >srv.ext
openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile srv.ext \
  -out srv.pem >/dev/null 2>&1
mkdir certs && cat /etc/ssl/certs/ca-certificates.crt ca.pem >certs/ca-certificates.crt
: >fake.out # exists before the child opens it (the loop may outrun it)
"$fake" --port 0 --quiet --api-key e2b_bench >>fake.out 2>fake.err &
fakepid=$!
url=
for _ in $(seq 300); do
  url=$(sed -n 's/^fake-e2b listening on \(http:[^ ]*\).*/\1/p' fake.out || true)
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "fake-e2b did not start"; exit 1; }
hp=${url#http://}
hp=${hp%%/*}
: >relay.out # exists before the child opens it (the loop may outrun it)
node "$here/relay.mjs" --target "$hp" --rtt 0 --tls-cert srv.pem --tls-key srv.key >>relay.out 2>&1 &
relaypid=$!
port=
for _ in $(seq 100); do
  port=$(sed -n 's/^relay listening on \([0-9]*\)$/\1/p' relay.out)
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { echo "relay did not start"; exit 1; }
fails=0
if "$benchc" --url "https://127.0.0.1:$port" --admin "$url" --scenario a --count 1 >untrusted.out 2>untrusted.err; then
  echo "FAIL: an untrusted server was accepted"; fails=1
elif grep -qi "certificate" untrusted.err; then
  echo "ok: untrusted server refused: $(head -1 untrusted.err)"
else
  echo "FAIL: refused, but not for its certificate: $(cat untrusted.err)"; fails=1
fi
if unshare -m sh -c 'mount --bind "$0" /etc/ssl/certs && exec "$@"' "$work/certs" \
  "$benchc" --url "https://127.0.0.1:$port" --admin "$url" --scenario a --count 3 >trusted.out 2>trusted.err; then
  echo "ok: trusted server accepted: $(cat trusted.out)"
else
  echo "FAIL: trusted server refused: $(cat trusted.err)"; fails=1
fi
exit $fails
