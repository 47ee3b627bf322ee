#!/usr/bin/env bash
# bench/tls_verify.test.sh FAKE BENCH_C: the library verifies TLS peers against
# the system CAs it loads once per provider (src/e2b/http_tls.c; README.md
# "Where E2B is: TLS, HTTP/2, 20 and 80 ms away"): a server whose CA is not
# trusted is refused, the same server is accepted once its CA is in the system
# store (a private mount namespace, as bench/run.sh --rtt does).
set -euo pipefail
fake=$(realpath "$1") benchc=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib/fake.sh
. "$here/lib/fake.sh"
# shellcheck source=bench/lib/relay.sh
. "$here/lib/relay.sh"
# shellcheck source=bench/lib/certs.sh
. "$here/lib/certs.sh"
work=$(mktemp -d /tmp/sbx-tlsv.XXXXXX)
cleanup() {
  relay_stop
  fake_stop
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
certs_make "$work" sbx-tlsv-ca IP:127.0.0.1
fake_start "$fake" "$work"
hp=${url#http://}
hp=${hp%%/*}
relay_start "$work" "$hp" --rtt 0 --tls-cert srv.pem --tls-key srv.key
port=$relay_port
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
