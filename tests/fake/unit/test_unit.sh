#!/usr/bin/env bash
# tests/fake/unit/test_unit.sh FAKE_E2B UNIT: fake-e2b/fake-e2b.service says what the README
# promises (state in /var/lib/fake-e2b, kept: no --ephemeral; the API key from a file; restart
# on a crash; stop = SIGTERM to fake-e2b alone, which keeps the sandboxes), systemd-analyze
# verify accepts it where systemd is installed, and its ExecStart runs: the server starts with
# exactly those flags (paths moved to a temporary directory), takes the key, stops on SIGTERM
# with exit 0.
set -euo pipefail
bin=$1
unit=$2
fail() { echo "test_unit: $*" >&2; exit 1; }
want() { grep -qxF -- "$1" "$unit" || fail "no line '$1' in $unit"; }

exec_line=$(grep '^ExecStart=' "$unit") || fail "no ExecStart"
[ "$(grep -c '^ExecStart=' "$unit")" -eq 1 ] || fail "more than one ExecStart"
want 'ExecStart=/usr/local/bin/fake-e2b --host 127.0.0.1 --port 3000 --state-dir /var/lib/fake-e2b --api-key-file /etc/fake-e2b/api-key --quiet'
want 'Type=simple'
want 'StateDirectory=fake-e2b'
want 'StateDirectoryMode=0711'
want 'KillMode=mixed'
want 'KillSignal=SIGTERM'
want 'Restart=on-failure'
want 'WantedBy=multi-user.target'
case "$exec_line" in *--ephemeral*) fail "the unit must keep its sandboxes";; esac
! grep -q '^RuntimeDirectory=' "$unit" || fail "RuntimeDirectory: /run/fake-e2b is shared"

tmp=$(mktemp -d /var/tmp/fk-unit-XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

if command -v systemd-analyze >/dev/null 2>&1; then
	sed "s|/usr/local/bin/fake-e2b|$bin|" "$unit" > "$tmp/fake-e2b.service"
	systemd-analyze verify "$tmp/fake-e2b.service" || fail "systemd-analyze verify refused it"
else
	echo "test_unit: no systemd-analyze: lines checked only"
fi

# its command, as systemd runs it (paths moved, port 0)
(umask 077 && echo "e2b_unit_test_key_0123456789" > "$tmp/api-key")
cmd=${exec_line#ExecStart=}
cmd=${cmd//\/usr\/local\/bin\/fake-e2b/$bin}
cmd=${cmd//\/var\/lib\/fake-e2b/$tmp/state}
cmd=${cmd//\/etc\/fake-e2b\/api-key/$tmp/api-key}
cmd=${cmd//--port 3000/--port 0}
# shellcheck disable=SC2086 # the unit's words, as systemd splits them
$cmd > "$tmp/out" 2> "$tmp/err" &
pid=$!
for _ in $(seq 1 300); do
	grep -q 'fake-e2b listening on' "$tmp/out" && break
	kill -0 "$pid" 2>/dev/null || fail "it exited: $(cat "$tmp/err")"
	sleep 0.1
done
port=$(sed -n 's|^fake-e2b listening on http://127.0.0.1:\([0-9]*\)$|\1|p' "$tmp/out")
[ -n "$port" ] || fail "no listening line: $(cat "$tmp/out" "$tmp/err")"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "X-API-Key: e2b_unit_test_key_0123456789" \
	"http://127.0.0.1:$port/v2/sandboxes")
[ "$code" = 200 ] || fail "the key file's key: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "X-API-Key: e2b_other" \
	"http://127.0.0.1:$port/v2/sandboxes")
[ "$code" = 401 ] || fail "another key: $code"
grep -qxF "fake-e2b: state directory $tmp/state (kept: sandboxes survive a restart)" "$tmp/err" ||
	fail "state line: $(cat "$tmp/err")"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" -eq 0 ] || fail "SIGTERM: exit $rc"
[ -d "$tmp/state" ] || fail "the state directory went"
echo "test_unit: ok"
