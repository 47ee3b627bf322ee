#!/usr/bin/env bash
# Run the live test against a private fake-e2b, configured only through the
# CAPYBARA_TEST_E2B_* variables a real run would use.
#   run-against-fake.sh <fake-e2b binary> <test_live binary>
set -euo pipefail
fake=$1
live=$2
dir=$(mktemp -d /tmp/sbx-live-XXXXXX)
key=e2b_live0$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
"$fake" --port 0 --port-file "$dir/port" --state-dir "$dir/state" --ephemeral --api-key "$key" --quiet \
	>"$dir/out.log" 2>&1 &
pid=$!
cleanup() {
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
for _ in $(seq 1 500); do
	[ -s "$dir/port" ] && break
	kill -0 "$pid" 2>/dev/null || { cat "$dir/out.log"; exit 1; }
	sleep 0.02
done
port=$(tr -d '\n' <"$dir/port")
[ -n "$port" ] || { echo "fake-e2b did not start"; cat "$dir/out.log"; exit 1; }
export CAPYBARA_TEST_E2B_API_KEY=$key
export CAPYBARA_TEST_E2B_TEMPLATE=capybara-sandbox
export CAPYBARA_TEST_E2B_API_URL=http://127.0.0.1:$port
export CAPYBARA_TEST_E2B_ENVD_URL=http://127.0.0.1:$port
"$live"
