#!/usr/bin/env bash
# tests/cli/cli_test.sh: the sandbox-e2b CLI end to end.
#
#   cli_test.sh SECTION CLI JSON_GET [FAKE_E2B] [HELLO]
#
# SECTION: help (every --help, usage errors), config (config check, config
# sources, the API key never printed), commands (every subcommand against a
# fake-e2b started here, exit codes, --json), paths (rm, mkdir, mv, stat --long and
# --user root against a fake-e2b started here), demo (sandbox-e2b demo), tls
# (SSL_CERT_FILE against fake-e2b --tls). The sections are
# cli_<section>.sh (cli_commands.sh with cli_exec.sh), sourced here; tls and the helpers
# they share are in this file.
# Prints "N passed, N failed" and exits non-zero when a check failed.
set -uo pipefail

section=$1 cli=$2 jget=$3 fake=${4:-} hello=${5:-}
abs() { [ -z "$1" ] || realpath "$1"; }
cli=$(abs "$cli") jget=$(abs "$jget") fake=$(abs "$fake") hello=$(abs "$hello")
pass=0 fail=0
tmp=$(mktemp -d /tmp/cli-test.XXXXXX)
fake_pid=
SECRET=e2b_cli_test_secret_0123456789

cleanup() {
	if [ -n "$fake_pid" ]; then
		kill -TERM "$fake_pid" 2>/dev/null
		wait "$fake_pid" 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

ok() { pass=$((pass + 1)); echo "ok   - $1"; }
no() {
	fail=$((fail + 1))
	echo "FAIL - $1"
	[ -n "${2:-}" ] && echo "       $2"
	[ -s "$tmp/out" ] && sed 's/^/       stdout: /' "$tmp/out" | head -20
	[ -s "$tmp/err" ] && sed 's/^/       stderr: /' "$tmp/err" | head -20
	return 0
}
# run ARGS...: the CLI with stdout/stderr to $tmp/out, $tmp/err; exit code in $rc.
run() {
	"$cli" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	cat "$tmp/out" "$tmp/err" >>"$tmp/all"
}
expect_rc() { # NAME WANT
	if [ "$rc" -eq "$2" ]; then ok "$1"; else no "$1" "exit $rc, want $2"; fi
}
expect_eq() { # NAME GOT WANT
	if [ "$2" == "$3" ]; then ok "$1"; else no "$1" "got '$2', want '$3'"; fi
}
expect_grep() { # NAME PATTERN FILE
	if grep -q -- "$2" "$3"; then ok "$1"; else no "$1" "'$2' not in $(basename "$3")"; fi
}
jq_out() { "$jget" "$1" <"$tmp/out"; }
no_secret() { # NAME: the API key appears in neither stdout nor stderr
	if grep -q "$SECRET" "$tmp/out" "$tmp/err"; then no "$1: API key printed"; else ok "$1: API key not printed"; fi
}
finish() {
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
}

# ---- a fake-e2b for the commands and paths sections ------------------------------------
start_fake() {
	# the key in a 0600 file, not on the command line (every local user sees that in ps)
	(umask 077 && printf '%s\n' "$SECRET" >"$tmp/api-key")
	"$fake" --port 0 --quiet --port-file "$tmp/port" --api-key-file "$tmp/api-key" >"$tmp/fake.out" 2>"$tmp/fake.err" &
	fake_pid=$!
	for _ in $(seq 1 300); do
		grep -q "listening on" "$tmp/fake.out" 2>/dev/null && break
		sleep 0.1
	done
	url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$tmp/fake.out")
	if [ -z "$url" ]; then
		echo "fake-e2b did not start:"
		cat "$tmp/fake.err"
		exit 1
	fi
	export SANDBOX_E2B_CONFIG="{\"apiKey\":\"$SECRET\",\"template\":\"capybara-sandbox\",\"apiUrl\":\"$url\"}"
	export SANDBOX_E2B_ENVD_URL=$url
	unset E2B_API_KEY E2B_TEMPLATE E2B_API_URL E2B_DOMAIN
}

# ---- tls: SSL_CERT_FILE names the CA bundle TLS trusts (docs/cli.md) --------------
test_tls() {
	(umask 077 && printf '%s\n' "$SECRET" >"$tmp/api-key")
	mkdir -p "$tmp/fk"
	"$fake" --port 0 --quiet --tls --state-dir "$tmp/fk" --api-key-file "$tmp/api-key" \
		>"$tmp/fake.out" 2>"$tmp/fake.err" &
	fake_pid=$!
	for _ in $(seq 1 300); do
		grep -q "listening on" "$tmp/fake.out" 2>/dev/null && break
		sleep 0.1
	done
	url=$(sed -n 's/.*listening on \(https:[^ ]*\).*/\1/p' "$tmp/fake.out")
	[ -n "$url" ] || { echo "fake-e2b --tls did not start:"; cat "$tmp/fake.err"; exit 1; }
	unset SANDBOX_E2B_CONFIG SANDBOX_E2B_ENVD_URL E2B_TEMPLATE E2B_DOMAIN SSL_CERT_FILE
	export E2B_API_KEY=$SECRET E2B_API_URL=$url
	run list
	expect_rc "list over TLS with fake-e2b's CA untrusted exits 1" 1
	expect_grep "the refusal is the certificate's" "certificate" "$tmp/err"
	SSL_CERT_FILE=$tmp/fk/ca.pem run list
	expect_rc "list with SSL_CERT_FILE=fake-e2b's ca.pem exits 0" 0
	SSL_CERT_FILE=/nonexistent/ca.pem run list
	expect_rc "list with SSL_CERT_FILE naming no file exits 1" 1
	SSL_CERT_FILE='' run list
	expect_rc "an empty SSL_CERT_FILE is unset: untrusted again" 1
	finish
}

# The sections (each file says what it checks)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/cli/cli_help.sh
. "$here/cli_help.sh"
# shellcheck source=tests/cli/cli_config.sh
. "$here/cli_config.sh"
# shellcheck source=tests/cli/cli_exec.sh
. "$here/cli_exec.sh"
# shellcheck source=tests/cli/cli_commands.sh
. "$here/cli_commands.sh"
# shellcheck source=tests/cli/cli_demo.sh
. "$here/cli_demo.sh"
# shellcheck source=tests/cli/cli_paths.sh
. "$here/cli_paths.sh"

case "$section" in
help) test_help ;;
config) test_config ;;
commands) test_commands ;;
paths) test_paths ;;
demo) test_demo ;;
tls) test_tls ;;
*)
	echo "unknown section $section"
	exit 2
	;;
esac
