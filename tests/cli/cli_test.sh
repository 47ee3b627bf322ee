#!/usr/bin/env bash
# tests/cli/cli_test.sh: the sandbox-e2b CLI end to end.
#
#   cli_test.sh SECTION CLI JSON_GET [FAKE_E2B] [HELLO]
#
# SECTION: help (every --help, usage errors), config (config check, config
# sources, the API key never printed), commands (every subcommand against a
# fake-e2b started here, exit codes, --json), paths (rm, mkdir, mv, stat --long and
# --user root against a fake-e2b started here), demo (sandbox-e2b demo), tls
# (SSL_CERT_FILE against fake-e2b --tls).
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

# ---- help --------------------------------------------------------------------------
test_help() {
	unset SANDBOX_E2B_CONFIG E2B_API_KEY E2B_TEMPLATE E2B_API_URL E2B_DOMAIN
	run --help
	expect_rc "--help exits 0" 0
	expect_grep "--help lists exec" "exec" "$tmp/out"
	expect_grep "--help documents exit 124" "124" "$tmp/out"
	for c in create resume suspend destroy destroy-by-name list info exec ps wait kill kill-all kill-tagged read write stat ls mkdir mv rm config demo; do
		run "$c" --help
		expect_rc "$c --help exits 0" 0
		expect_grep "$c --help shows usage" "Usage: sandbox-e2b $c" "$tmp/out"
		expect_grep "$c --help has an example" "Example" "$tmp/out"
		run help "$c"
		expect_rc "help $c exits 0" 0
	done
	# serve --help lists its method table, every method in order (initialize's "methods")
	run serve --help
	expect_rc "serve --help exits 0" 0
	got=$(sed -n '/^Methods (/,/^$/p' "$tmp/out" | tail -n +2 | tr -d ',\n' | tr -s ' ' | sed 's/^ //; s/ $//')
	want=$(printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}' |
		"$cli" serve 2>/dev/null | "$jget" result.methods | tr -d '[]"' | tr ',' ' ')
	expect_eq "serve --help names every method, in the table's order" "$got" "$want"
	# serve names its errors in data, never only in the message (bindings/protocol/methods.md)
	printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}' |
		"$cli" serve >"$tmp/out" 2>"$tmp/err"
	expect_eq "initialize's error_codes name -32602" "$(jq_out result.error_codes.-32602)" invalid_params
	expect_eq "initialize's error_codes name -32001" "$(jq_out result.error_codes.-32001)" not_configured
	printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"log":"x"}}' |
		"$cli" serve >"$tmp/out" 2>"$tmp/err"
	expect_eq "an error of initialize carries its name" "$(jq_out error.data.code)" invalid_params
	printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"stat","params":{"id":"x","path":"/x"}}' |
		E2B_API_KEY=$SECRET "$cli" serve >"$tmp/out" 2>"$tmp/err"
	expect_eq "not configured: why the env's config was refused, as data" \
		"$(jq_out error.data.config_error)" "invalid deployment config: template: required"
	no_secret "serve's not-configured error"
	run
	expect_rc "no command exits 2" 2
	expect_eq "no command: nothing on stdout" "$(cat "$tmp/out")" ""
	expect_grep "no command: usage on stderr" "Usage: sandbox-e2b" "$tmp/err"
	if grep -aq "with -v for details" "$cli"; then no "no hint promises -v details"; else ok "no hint promises -v details"; fi
	run exec --help
	expect_grep "-v is described truthfully" "warnings" "$tmp/out"
	run frobnicate
	expect_rc "unknown command exits 2" 2
	expect_grep "unknown command says what next" "--help" "$tmp/err"
	run pause x
	expect_rc "another tool's verb exits 2 (never run)" 2
	expect_eq "pause: did you mean suspend" "$(head -n 1 "$tmp/err")" "sandbox-e2b: unknown command 'pause'; did you mean 'suspend'?"
	run sttat x y
	expect_eq "a typo: did you mean" "$(head -n 1 "$tmp/err")" "sandbox-e2b: unknown command 'sttat'; did you mean 'stat'?"
	run connect x
	expect_eq "connect: what it is here" "$(head -n 1 "$tmp/err")" "sandbox-e2b: unknown command 'connect'; here that is: exec -i ID bash (no terminal yet: no prompt, no job control)"
	run frobnicate
	expect_eq "nothing close: no guess" "$(head -n 1 "$tmp/err")" "sandbox-e2b: unknown command 'frobnicate'"
	run exec
	expect_rc "exec without ID exits 2" 2
	run read onlyid
	expect_rc "read without PATH exits 2" 2
	run exec someid --bogus -- true
	expect_rc "unknown option exits 2" 2
	run exec someid --timeout-ms abc -- true
	expect_rc "bad number exits 2" 2
	run create x --egress sideways
	expect_rc "bad egress exits 2" 2
	run create x
	expect_rc "no configuration exits 2" 2
	expect_grep "no configuration names E2B_API_KEY" "E2B_API_KEY" "$tmp/err"
	run create x --json
	expect_rc "usage error with --json exits 2" 2
	expect_eq "usage error --json is one object" "$(jq_out error.code)" "usage"
	run exec --bogus --json
	expect_rc "early usage error with --json exits 2" 2
	expect_eq "early usage error --json object" "$(jq_out error.code)" "usage"
	run --version
	expect_rc "--version exits 0" 0
	# A value-taking option as the last word: a usage error, never a crash (was SIGSEGV)
	local o
	for o in --config --template --envd-url; do
		run "$o"
		expect_rc "'$o' as the last argument exits 2" 2
		expect_grep "'$o' as the last argument says it needs a value" "option '$o' needs a value" "$tmp/err"
		run exec "$o"
		expect_rc "'exec $o' as the last argument exits 2" 2
	done
	# Numbers out of range are refused before anything else happens
	run create x --cpu 99999999999999999999
	expect_rc "--cpu 1e20 exits 2" 2
	expect_grep "--cpu 1e20 says the bound" "--cpu must be at most 1024" "$tmp/err"
	run create x --disk-mb 18446744073709551617
	expect_rc "--disk-mb 2^64+1 exits 2" 2
	expect_grep "--disk-mb 2^64+1 says the bound" "--disk-mb must be at most" "$tmp/err"
	run create x --memory-mb -5
	expect_rc "--memory-mb -5 exits 2" 2
	run exec x --max-output-bytes 18446744073709551617 -- true
	expect_rc "--max-output-bytes 2^64+1 exits 2" 2
	expect_grep "--max-output-bytes 2^64+1 says the bound" "must be at most" "$tmp/err"
	run exec x --timeout-ms 5q -- true
	expect_rc "bad duration exits 2" 2
	expect_grep "bad duration shows the forms" "1500ms, 5s or 2m" "$tmp/err"
	run exec x --timeout-ms 0s -- true
	expect_rc "zero duration exits 2" 2
	run exec x --timeout-ms 99999999999h -- true
	expect_rc "huge duration exits 2" 2
	run create x --bogus=1
	expect_rc "unknown --opt=value exits 2" 2
	expect_grep "unknown option named" "unknown option '--bogus=1'" "$tmp/err"
	run destroy x --json=1
	expect_rc "a flag given a value exits 2" 2
	expect_grep "a flag given a value says so" "option '--json' takes no value" "$tmp/err"
	# Completion: the words come from the command table
	"$cli" __complete "" >"$tmp/out"
	expect_grep "__complete lists commands" "^exec$" "$tmp/out"
	if grep -q "__complete" "$tmp/out"; then no "__complete is hidden"; else ok "__complete is hidden"; fi
	expect_eq "__complete a command prefix" "$("$cli" __complete des)" "$(printf 'destroy\ndestroy-by-name')"
	expect_eq "__complete an option" "$("$cli" __complete create --eg)" "--egress"
	expect_eq "__complete an option's values" "$("$cli" __complete create --egress "")" "$(printf 'none\nallowlist\nopen')"
	expect_eq "__complete after global options" "$("$cli" __complete --config f.json exec x --time)" "--timeout-ms"
	expect_eq "__complete config check" "$("$cli" __complete config "")" "check"
	if bash -n "$(dirname "$0")/../../cli/completion/sandbox-e2b.bash"; then ok "completion script parses"; else no "completion script parses"; fi
	out=$(bash -c 'source "$1"; PATH=$(dirname "$2"):$PATH; COMP_WORDS=(sandbox-e2b cre); COMP_CWORD=1; _sandbox_e2b; printf "%s\n" "${COMPREPLY[@]}"' _ \
		"$(dirname "$0")/../../cli/completion/sandbox-e2b.bash" "$cli")
	expect_eq "completion script completes 'cre'" "$out" "create"
	finish
}

# ---- config --------------------------------------------------------------------------
test_config() {
	unset SANDBOX_E2B_CONFIG E2B_API_KEY E2B_TEMPLATE E2B_API_URL E2B_DOMAIN
	printf '{"apiKey":"%s","template":"capybara-sandbox"}' "$SECRET" >"$tmp/valid.json"
	# serve's initialize: the keys its config leaves out come from the E2B_* variables, a key
	# it has (null too) wins; --config-from-initialize reads no source at start
	init() { # CONFIG-JSON [serve options]: initialize with that config, then stat
		local cfg=$1
		shift
		printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"config":'"$cfg"'}}' \
			'{"jsonrpc":"2.0","id":2,"method":"stat","params":{"id":"x","path":"/x"}}' |
			"$cli" serve "$@" >"$tmp/all.serve" 2>"$tmp/err"
		grep '"id":1' "$tmp/all.serve" >"$tmp/out"
	}
	E2B_API_KEY=$SECRET E2B_API_URL=http://127.0.0.1:9 E2B_DOMAIN=env.example init '{"template":"t","domain":"given.example"}' --config-from-initialize
	expect_eq "initialize: apiKey from E2B_API_KEY" "$(jq_out result.config.apiKey)" "[redacted]"
	expect_eq "initialize: apiUrl from E2B_API_URL" "$(jq_out result.config.apiUrl)" "http://127.0.0.1:9"
	expect_eq "initialize: a key given wins over its variable" "$(jq_out result.config.domain)" "given.example"
	expect_eq "--config-from-initialize: no source read at start" "$(cat "$tmp/err")" ""
	no_secret "initialize with apiKey from E2B_API_KEY"
	E2B_TEMPLATE=from-env init "{\"apiKey\":\"$SECRET\",\"template\":null}"
	expect_eq "initialize: a key given as null is not filled" "$(jq_out error.data.code)" invalid
	E2B_API_KEY=$SECRET init '{}' --config-from-initialize
	expect_eq "initialize: a key with no variable stays missing" "$(jq_out error.message)" \
		"invalid deployment config: template: required"
	expect_eq "--config-from-initialize: not even an invalid source is read" "$(cat "$tmp/err")" ""
	run config check "$tmp/valid.json"
	expect_rc "config check valid exits 0" 0
	no_secret "config check valid"
	"$jget" apiKey <"$tmp/out" >"$tmp/v"
	expect_eq "config check redacts apiKey" "$(cat "$tmp/v")" "[redacted]"
	expect_eq "config check fills domain" "$("$jget" domain <"$tmp/out")" "e2b.app"
	expect_eq "config check fills timeoutSeconds" "$("$jget" timeoutSeconds <"$tmp/out")" "3600"

	run config check "$tmp/valid.json" --json
	expect_rc "config check --json exits 0" 0
	expect_eq "config check --json valid" "$(jq_out valid)" "true"
	expect_eq "config check --json redacted" "$(jq_out config.apiKey)" "[redacted]"

	printf '{"apiKey":"%s","template":"capybara-sandbox","timeoutSeconds":5}' "$SECRET" >"$tmp/bad1.json"
	run config check "$tmp/bad1.json"
	expect_rc "timeoutSeconds out of range exits 2" 2
	expect_grep "reason names timeoutSeconds" "timeoutSeconds" "$tmp/err"
	no_secret "config check invalid"

	printf '{"apiKey":"%s","template":"capybara-sandbox","color":"red"}' "$SECRET" >"$tmp/bad2.json"
	run config check "$tmp/bad2.json"
	expect_rc "unknown key exits 2" 2
	expect_grep "reason names the unknown key" "color" "$tmp/err"
	no_secret "config check unknown key"

	printf '{"apiKey":"%s"}' "$SECRET" >"$tmp/bad3.json"
	run config check "$tmp/bad3.json" --json
	expect_rc "missing template exits 2" 2
	expect_grep "reason names template" "template" "$tmp/err"
	expect_eq "invalid --json valid=false" "$(jq_out valid)" "false"
	no_secret "config check missing template"

	printf 'not json' >"$tmp/bad4.json"
	run config check "$tmp/bad4.json"
	expect_rc "not JSON exits 2" 2
	expect_grep "not JSON: hint is about the syntax" "fix the JSON syntax" "$tmp/err"
	if grep -q "keys named above" "$tmp/err"; then no "not JSON: no hint about named keys"; else ok "not JSON: no hint about named keys"; fi
	printf '[1]' >"$tmp/bad5.json"
	run config check "$tmp/bad5.json"
	expect_rc "not an object exits 2" 2
	expect_grep "not an object: hint shows an object" "must be one JSON object" "$tmp/err"
	if grep -q "keys named above" "$tmp/err"; then no "not an object: no hint about named keys"; else ok "not an object: no hint about named keys"; fi
	run config check "$tmp/bad2.json"
	expect_grep "unknown key: hint names the keys" "fix the keys named above" "$tmp/err"

	run create x --config "$tmp/bad3.json" --json
	expect_rc "create with an invalid config exits 2" 2
	expect_eq "create --json invalid config: no valid key" "$(jq_out valid)" "<missing>"
	expect_eq "create --json invalid config: error object" "$(jq_out error.code)" "SBX_EINVALID"

	run config check "$tmp/nonexistent.json"
	expect_rc "missing file exits 2" 2

	run config check "$tmp/bad3.json" --template tpl-x
	expect_rc "--template fills a missing template" 0
	expect_eq "--template overrides" "$("$jget" template <"$tmp/out")" "tpl-x"

	E2B_API_KEY=$SECRET E2B_TEMPLATE=envtpl E2B_DOMAIN=e2b.example.com run config check
	expect_rc "E2B_* variables make a valid config" 0
	expect_eq "E2B_TEMPLATE used" "$("$jget" template <"$tmp/out")" "envtpl"
	expect_eq "E2B_DOMAIN used" "$("$jget" domain <"$tmp/out")" "e2b.example.com"
	no_secret "config from E2B_* variables"

	E2B_API_KEY=$SECRET run config check
	expect_rc "E2B_API_KEY without template exits 2" 2
	expect_grep "missing template named" "template" "$tmp/err"
	expect_grep "missing template: hint names E2B_TEMPLATE" "set E2B_TEMPLATE or pass --template" "$tmp/err"

	E2B_API_KEY=$SECRET E2B_TEMPLATE=t E2B_API_URL=ftp://x run config check
	expect_rc "bad E2B_API_URL exits 2" 2
	expect_grep "bad apiUrl named" "apiUrl" "$tmp/err"

	SANDBOX_E2B_CONFIG="{\"apiKey\":\"$SECRET\",\"template\":\"j\",\"allowOpenEgress\":true}" run config check
	expect_rc "SANDBOX_E2B_CONFIG is used" 0
	expect_eq "SANDBOX_E2B_CONFIG allowOpenEgress" "$("$jget" allowOpenEgress <"$tmp/out")" "true"
	no_secret "SANDBOX_E2B_CONFIG"

	SANDBOX_E2B_CONFIG='{"apiKey":"x","template":"j"}' run config check "$tmp/valid.json"
	expect_rc "an explicit file wins over SANDBOX_E2B_CONFIG" 0

	# a key the config leaves out comes from its variable; one it has wins
	SANDBOX_E2B_CONFIG='{"template":"j","apiUrl":"http://kept:1"}' E2B_API_KEY=$SECRET \
	    E2B_API_URL=http://ignored:2 E2B_DOMAIN=example.org run config check
	expect_rc "SANDBOX_E2B_CONFIG completed from E2B_* exits 0" 0
	expect_eq "the config's own apiUrl wins" "$("$jget" apiUrl <"$tmp/out")" "http://kept:1"
	expect_eq "domain from E2B_DOMAIN" "$("$jget" domain <"$tmp/out")" "example.org"
	expect_eq "apiKey from E2B_API_KEY (redacted)" "$("$jget" apiKey <"$tmp/out")" "[redacted]"
	no_secret "SANDBOX_E2B_CONFIG completed from E2B_*"
	finish
}

# ---- commands against fake-e2b ---------------------------------------------------------
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

# maxrss CMD...: run CMD (stdout to $tmp/maxrss.out, exit code to $tmp/maxrss.rc) and
# print its peak resident set size in KiB (getrusage of the child)
maxrss() {
	python3 -c 'import resource, subprocess, sys
with open(sys.argv[1], "wb") as out:
    rc = subprocess.call(sys.argv[3:], stdout=out, stderr=subprocess.DEVNULL)
open(sys.argv[2], "w").write("%d\n" % rc)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$tmp/maxrss.out" "$tmp/maxrss.rc" "$@"
}

# fake_fault JSON: add a fault rule to the running fake-e2b (POST /_fake/faults, over
# bash's /dev/tcp: no curl needed); prints the status line
fake_fault() {
	local hp=${url#http://}
	exec 4<>"/dev/tcp/${hp%:*}/${hp##*:}" || return 1
	printf 'POST /_fake/faults HTTP/1.1\r\nHost: %s\r\nX-API-Key: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
		"$hp" "$SECRET" "${#1}" "$1" >&4
	head -1 <&4 | tr -d '\r'
	exec 4<&-
}

# wait until `sleep` runs in sandbox $1
wait_sleep() {
	for _ in $(seq 1 100); do
		"$cli" exec "$1" -- 'pgrep -x sleep >/dev/null' >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

test_exec() { # ID
	local id=$1
	run exec "$id" -- echo hello
	expect_rc "exec echo exits 0" 0
	expect_eq "exec stdout" "$(cat "$tmp/out")" "hello"

	run exec "$id" -- 'echo out; echo err >&2; exit 3'
	expect_rc "exec exit 3 exits 3" 3
	expect_eq "exec stdout of failing command" "$(cat "$tmp/out")" "out"
	expect_grep "exec stderr to stderr" "err" "$tmp/err"

	run exec "$id" 'exit 7'
	expect_rc "exec without -- works" 7

	# Options end at the first word after ID: the rest is the command, dashes and all
	run exec "$id" echo -n --json x
	expect_rc "exec ID echo -n --json x exits 0" 0
	expect_eq "exec: words after the command are the command's" "$(cat "$tmp/out")" "--json x"
	run exec "$id" ls -la /workspace
	expect_rc "exec ID ls -la works" 0
	expect_grep "exec ID ls -la lists" "^total" "$tmp/out"
	run exec "$id" --cwd /tmp pwd
	expect_eq "options between ID and the command still count" "$(cat "$tmp/out")" "/tmp"
	run exec --cwd /tmp "$id" -- pwd
	expect_eq "options before ID count" "$(cat "$tmp/out")" "/tmp"
	run exec "$id" --timeout-ms 1s sleep 30
	expect_rc "--timeout-ms 1s times out (exit 124)" 124
	expect_grep "--timeout-ms 1s is 1000 ms" "after 1000 ms" "$tmp/err"

	run exec "$id" --timeout-ms 1000 -- sleep 30
	expect_rc "exec timeout exits 124" 124
	expect_grep "timeout says what to do" "timeout-ms" "$tmp/err"

	run exec "$id" --json --timeout-ms 1000 -- 'echo before; sleep 30'
	expect_rc "exec --json timeout exits 124" 124
	expect_eq "--json timed_out" "$(jq_out timed_out)" "true"
	expect_eq "--json exit_code null on timeout" "$(jq_out exit_code)" "null"

	run exec "$id" --env FOO=bar --env BAZ=q=x -- 'echo "$FOO $BAZ"'
	expect_eq "exec --env" "$(cat "$tmp/out")" "bar q=x"

	run exec "$id" --cwd /tmp -- pwd
	expect_eq "exec --cwd" "$(cat "$tmp/out")" "/tmp"

	run exec "$id" -- whoami
	expect_eq "exec runs as the sandbox user" "$(cat "$tmp/out")" "sandbox"

	run exec "$id" --json -- 'echo hi; echo oops >&2; exit 4'
	expect_rc "exec --json keeps the exit code" 4
	expect_eq "--json exit_code" "$(jq_out exit_code)" "4"
	expect_eq "--json stdout" "$(jq_out stdout)" "hi"
	expect_eq "--json stderr" "$(jq_out stderr)" "oops"
	expect_eq "--json truncated" "$(jq_out truncated)" "false"

	run exec "$id" --json -- "printf 'ok\\xff\\xfe'"
	expect_eq "--json invalid UTF-8 stdout is null" "$(jq_out stdout)" "null"
	expect_eq "--json invalid UTF-8 in stdout_b64" "$(jq_out stdout_b64)" "b2v//g=="

	run exec "$id" --json -- "printf 'a\\0b'"
	expect_grep "--json keeps NUL bytes as \\u0000" '"stdout":"a\\u0000b"' "$tmp/out"

	run exec "$id" --json --max-output-bytes 10 -- 'seq 1 1000'
	expect_eq "--max-output-bytes sets truncated" "$(jq_out truncated)" "true"
	expect_eq "--max-output-bytes keeps 10 bytes" "$(jq_out stdout | head -c 100 | wc -c)" "11"

	run exec "$id" --tag 'bad tag!' -- true
	expect_rc "exec bad tag exits 2" 2
	expect_grep "exec bad tag: the seed's message" "invalid sandbox tag" "$tmp/err"
	if grep -qF "tag 'bad tag!' must match ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$" "$tmp/err"; then
		ok "exec bad tag: hint names the tag and rule"
	else no "exec bad tag: hint names the tag and rule"; fi
	run kill-tagged "$id" ok-tag 'bad tag!'
	expect_rc "kill-tagged bad tag exits 2" 2
	expect_grep "kill-tagged bad tag: hint names the bad one" "tag 'bad tag!' must match" "$tmp/err"

	# Live output: the command prints a line, then waits for a file that this test
	# makes only after it has read that line from the tool. Output held back until
	# the end would never show the line (the read times out after 60 s): no race.
	rm -f "$tmp/live"
	mkfifo "$tmp/live"
	"$cli" exec "$id" --timeout-ms 2m 'echo first; while [ ! -e /workspace/live-go ]; do sleep 0.05; done; echo second' \
		>"$tmp/live" 2>"$tmp/live.err" &
	local lp=$! first=
	exec 3<"$tmp/live"
	if read -r -t 60 first <&3; then ok "exec prints output as it arrives"; else no "exec prints output as it arrives" "no line within 60 s"; fi
	expect_eq "live output: the first line" "$first" "first"
	"$cli" exec "$id" 'touch /workspace/live-go' >/dev/null 2>&1
	expect_eq "live output: the rest after the file exists" "$(cat <&3)" "second"
	exec 3<&-
	wait "$lp"
	expect_eq "live output: exit 0" "$?" "0"
	# A reader that closes the pipe (| head): exit 141 as SIGPIPE would, nothing said,
	# and the command is killed
	"$cli" exec "$id" 'yes' 2>"$tmp/err" | head -1 >"$tmp/out"
	expect_eq "exec | head: exit 141" "${PIPESTATUS[0]}" "141"
	expect_eq "exec | head: the line" "$(cat "$tmp/out")" "y"
	expect_eq "exec | head: nothing on stderr" "$(cat "$tmp/err")" ""
	run exec "$id" 'pgrep -x yes || echo none'
	expect_eq "exec | head: the command was killed" "$(cat "$tmp/out")" "none"
	# stderr goes to stderr as it arrives too (same mechanism), stdout stays clean
	run exec "$id" 'echo to-out; echo to-err >&2'
	expect_eq "live stdout only on stdout" "$(cat "$tmp/out")" "to-out"
	expect_eq "live stderr only on stderr" "$(cat "$tmp/err")" "to-err"

	# A stream that ends without an exit status: the output so far, then the error
	expect_eq "fault added" "$(fake_fault '{"method":"POST","path":"/process.Process/Start","kind":"stream_no_end","times":1}')" "HTTP/1.1 201 Created"
	run exec "$id" 'echo partial'
	expect_rc "stream without end: exit 1" 1
	expect_eq "stream without end: the output so far is printed" "$(cat "$tmp/out")" "partial"
	expect_grep "stream without end: the error is said" "SBX_EPROTOCOL" "$tmp/err"
	fake_fault '{"method":"POST","path":"/process.Process/Start","kind":"stream_no_end","times":1}' >/dev/null
	run exec "$id" --json 'echo partial'
	expect_rc "stream without end --json: exit 1" 1
	expect_eq "stream without end --json: error code" "$(jq_out error.code)" "SBX_EPROTOCOL"
	expect_eq "stream without end --json: the output so far" "$(jq_out stdout)" "partial"

	# stdin: -i forwards it; without -i the tool does not read it at all
	printf 'b\na\nc\n' | "$cli" exec -i "$id" sort >"$tmp/out" 2>"$tmp/err"
	expect_eq "exec -i forwards stdin" "$(cat "$tmp/out")" "$(printf 'a\nb\nc')"
	head -c 1048576 /dev/urandom >"$tmp/mib"
	"$cli" exec --stdin "$id" -- 'sha256sum | cut -d" " -f1' <"$tmp/mib" >"$tmp/out" 2>"$tmp/err"
	expect_eq "exec --stdin: 1 MiB through sha256sum" "$(cat "$tmp/out")" "$(sha256sum <"$tmp/mib" | cut -d' ' -f1)"
	out=$(printf 'kept\n' | { "$cli" exec "$id" 'cat; echo done' 2>/dev/null; cat; })
	expect_eq "without -i: the command reads EOF and stdin is left unread" "$out" "$(printf 'done\nkept')"
	# -i returns when the command ends, even while stdin stays open (no EOF ever comes)
	rm -f "$tmp/open"
	mkfifo "$tmp/open"
	exec 5<>"$tmp/open"
	timeout 60 "$cli" exec -i "$id" 'echo quick' <"$tmp/open" >"$tmp/out" 2>"$tmp/err"
	expect_eq "exec -i returns when the command ends, stdin still open" "$?" "0"
	expect_eq "exec -i with open stdin: output" "$(cat "$tmp/out")" "quick"
	timeout 60 "$cli" exec -i "$id" 'cat; echo end' <&- >"$tmp/out" 2>"$tmp/err"
	expect_eq "exec -i with stdin closed: the command reads EOF" "$?:$(cat "$tmp/out")" "0:end"
	# Ctrl-C during exec -i kills the remote command and exits 130
	"$cli" exec -i "$id" 'sleep 300' <"$tmp/open" >/dev/null 2>"$tmp/int.err" &
	local ip=$!
	wait_sleep "$id"
	kill -INT "$ip"
	wait "$ip"
	expect_eq "SIGINT during exec -i exits 130" "$?" "130"
	run exec "$id" -- 'pgrep -x sleep || echo none'
	expect_eq "SIGINT during exec -i killed the remote command" "$(cat "$tmp/out")" "none"
	exec 5>&-
	run exec "$id" --help
	expect_grep "exec --help says stdin is not read without -i" "stdin is" "$tmp/out"
	expect_grep "exec --help says it" "not read unless -i is given" "$tmp/out"
	run exec --background -i "$id" true
	expect_rc "--background with -i exits 2" 2

	# Background commands: exec --background prints the pid; ps, wait, kill
	run exec --background "$id" 'while [ ! -e /workspace/bg-go ]; do sleep 0.05; done; exit 5'
	expect_rc "exec --background exits 0" 0
	local bpid
	bpid=$(cat "$tmp/out")
	if [[ "$bpid" =~ ^[0-9]+$ ]]; then ok "exec --background prints the pid"; else no "exec --background prints the pid" "'$bpid'"; fi
	run ps "$id"
	expect_rc "ps exits 0" 0
	expect_grep "ps lists the background command" "^$bpid .*while \[ ! -e /workspace/bg-go \]" "$tmp/out"
	run ps "$id" --json
	expect_grep "ps --json has the pid and the command" "{\"pid\":$bpid,\"tag\":null,\"command\":\"while \[ ! -e /workspace/bg-go \]" "$tmp/out"
	"$cli" wait "$id" "$bpid" >"$tmp/wait.out" 2>"$tmp/wait.err" &
	local wp=$!
	"$cli" exec "$id" 'touch /workspace/bg-go' >/dev/null 2>&1
	wait "$wp"
	expect_eq "wait exits with the command's exit code" "$?" "5"
	run exec --background --json "$id" 'echo json-bg'
	expect_eq "exec --background --json has the pid" "$(jq_out pid)" "$(jq_out pid | grep -E '^[0-9]+$')"
	expect_eq "exec --background --json has the id" "$(jq_out id)" "$id"
	run wait "$id" "$(jq_out pid)" --json
	expect_eq "wait --json exit_code" "$(jq_out exit_code)" "0"
	# wait streams what the command prints from the attach on, within --max-output-bytes:
	# the command says "ready" until a file exists, then prints far past the budget; the
	# test makes the file only after wait has shown a line (so wait is attached)
	run exec --background "$id" 'while [ ! -e /workspace/wait-go ]; do echo ready; sleep 0.05; done; seq 1 10000'
	bpid=$(cat "$tmp/out")
	rm -f "$tmp/wlive"
	mkfifo "$tmp/wlive"
	"$cli" wait "$id" "$bpid" --max-output-bytes 100 >"$tmp/wlive" 2>"$tmp/wait.err" &
	wp=$!
	exec 3<"$tmp/wlive"
	if read -r -t 60 first <&3; then ok "wait prints output as it arrives"; else no "wait prints output as it arrives"; fi
	expect_eq "wait: the first line" "$first" "ready"
	"$cli" exec "$id" 'touch /workspace/wait-go' >/dev/null 2>&1
	cat <&3 >"$tmp/wrest"
	exec 3<&-
	wait "$wp"
	expect_eq "wait exits 0 when the command does" "$?" "0"
	local wbytes=$(( ${#first} + 1 + $(wc -c <"$tmp/wrest") ))
	if [ "$wbytes" -eq 100 ]; then ok "wait --max-output-bytes 100: exactly 100 bytes"; else no "wait --max-output-bytes caps the output" "$wbytes bytes"; fi
	expect_grep "wait says the output was truncated" "output truncated (raise --max-output-bytes)" "$tmp/wait.err"
	run exec --background "$id" 'sleep 300'
	bpid=$(cat "$tmp/out")
	run kill "$id" "$bpid"
	expect_rc "kill ID PID exits 0" 0
	run ps "$id"
	if grep -q "^$bpid " "$tmp/out"; then no "kill ID PID ended it" "$(cat "$tmp/out")"; else ok "kill ID PID ended it"; fi
	run exec "$id" 'pgrep -x sleep || echo none'
	expect_eq "kill ID PID killed the whole tree" "$(cat "$tmp/out")" "none"
	run kill "$id" 4000000
	expect_rc "kill of a pid not running exits 0" 0
	run kill "$id" 0
	expect_rc "kill pid 0 exits 2" 2
	run wait "$id" notapid
	expect_rc "wait with a bad pid exits 2" 2

	# kill-tagged: a tagged background exec returns once killed
	"$cli" exec "$id" --tag bg -- sleep 300 >"$tmp/bg.out" 2>&1 &
	local bg=$!
	if wait_sleep "$id"; then ok "tagged command started"; else no "tagged command started"; fi
	run kill-tagged "$id" other
	expect_rc "kill-tagged other tag exits 0" 0
	# kill-tagged returns once its kill script has run: the command is still there, and so
	# is the exec waiting for it
	run exec "$id" -- 'pgrep -x sleep >/dev/null && echo alive || echo gone'
	expect_eq "kill-tagged spares other tags" "$(cat "$tmp/out")" "alive"
	if kill -0 "$bg" 2>/dev/null; then ok "kill-tagged spares the exec of another tag"; else no "kill-tagged spares the exec of another tag"; fi
	run kill-tagged "$id" bg --json
	expect_rc "kill-tagged exits 0" 0
	expect_eq "kill-tagged --json ok" "$(jq_out ok)" "true"
	local t0=$SECONDS
	wait "$bg"
	local bgrc=$?
	if [ $((SECONDS - t0)) -lt 60 ] && [ "$bgrc" -ne 0 ]; then ok "killed exec returned (exit $bgrc)"; else no "killed exec returned" "exit $bgrc after $((SECONDS - t0)) s"; fi

	# kill-all
	"$cli" exec "$id" -- sleep 300 >/dev/null 2>&1 &
	bg=$!
	wait_sleep "$id"
	run kill-all "$id"
	expect_rc "kill-all exits 0" 0
	t0=$SECONDS
	wait "$bg"
	bgrc=$?
	if [ $((SECONDS - t0)) -lt 60 ] && [ "$bgrc" -ne 0 ]; then ok "kill-all ended the exec (exit $bgrc)"; else no "kill-all ended the exec"; fi

	# Ctrl-C: SIGINT to the CLI kills the remote command and exits 130
	"$cli" exec "$id" -- 'sleep 300' >/dev/null 2>"$tmp/int.err" &
	bg=$!
	wait_sleep "$id"
	kill -INT "$bg"
	t0=$SECONDS
	wait "$bg"
	bgrc=$?
	expect_eq "SIGINT during exec exits 130" "$bgrc" "130"
	if [ $((SECONDS - t0)) -lt 30 ]; then ok "SIGINT answered promptly"; else no "SIGINT answered promptly"; fi
	run exec "$id" -- 'pgrep -x sleep || echo none'
	expect_eq "SIGINT killed the remote command" "$(cat "$tmp/out")" "none"
}

test_files() { # ID
	local id=$1
	printf 'line one\nline two\n' >"$tmp/a.txt"
	run write "$id" /workspace/dir/a.txt "$tmp/a.txt"
	expect_rc "write FILE exits 0" 0
	run read "$id" /workspace/dir/a.txt
	expect_rc "read exits 0" 0
	if cmp -s "$tmp/out" "$tmp/a.txt"; then ok "read returns the bytes written"; else no "read returns the bytes written"; fi
	"$cli" read "$id" /workspace/dir/a.txt >/dev/full 2>"$tmp/err"
	rc=$?
	expect_rc "read to a full stdout exits 1" 1
	expect_grep "read to a full stdout says why and what to check" \
		"cannot write to stdout: No space left on device; check the disk" "$tmp/err"

	head -c 70000 /dev/urandom >"$tmp/bin"
	"$cli" write "$id" /workspace/bin.dat <"$tmp/bin" >/dev/null 2>"$tmp/err"
	rc=$?
	expect_rc "write from stdin exits 0" 0
	run read "$id" /workspace/bin.dat
	if cmp -s "$tmp/out" "$tmp/bin"; then ok "binary round trip"; else no "binary round trip"; fi
	run read "$id" /workspace/bin.dat --json
	jq_out content_b64 | base64 -d >"$tmp/bin2"
	if cmp -s "$tmp/bin2" "$tmp/bin"; then ok "read --json content_b64 round trip"; else no "read --json content_b64 round trip"; fi
	expect_eq "read --json size" "$(jq_out size)" "70000"

	run read "$id" /workspace/dir/a.txt --json
	expect_eq "read --json content" "$(jq_out content)" "$(cat "$tmp/a.txt")"
	expect_eq "read --json truncated" "$(jq_out truncated)" "false"

	run read "$id" /workspace/dir/a.txt --max-bytes 4
	expect_eq "read --max-bytes" "$(cat "$tmp/out")" "line"
	expect_grep "read truncation reported" "max-bytes" "$tmp/err"

	run read "$id" /workspace/dir/a.txt --max-bytes 4 --json
	expect_eq "read --max-bytes --json truncated" "$(jq_out truncated)" "true"
	expect_eq "read --max-bytes --json content" "$(jq_out content)" "line"
	expect_eq "read --max-bytes --json size" "$(jq_out size)" "4"
	run read "$id" /workspace/dir/a.txt --max-bytes 18
	expect_eq "read --max-bytes = size: not truncated" "$(cat "$tmp/err")" ""

	# Streamed files: 48 MiB each way (past the old 16 MiB read cap) with bounded memory
	# (growth over the same command moving 1 KiB, so sanitizer builds compare alike)
	head -c 1024 /dev/urandom >"$tmp/small"
	local base rss
	base=$(maxrss "$cli" write "$id" /workspace/small.bin "$tmp/small")
	head -c $((48 << 20)) /dev/urandom >"$tmp/big"
	rss=$(maxrss "$cli" write "$id" /workspace/big.bin "$tmp/big")
	expect_eq "write 48 MiB from a file: exit 0" "$(tail -1 "$tmp/maxrss.rc")" "0"
	if [ $((rss - base)) -lt $((16 << 10)) ]; then ok "write 48 MiB: RSS growth $((rss - base)) KiB < 16 MiB"; else no "write 48 MiB with bounded memory" "max RSS ${rss} KiB, 1 KiB write ${base} KiB"; fi
	base=$(maxrss "$cli" read "$id" /workspace/small.bin)
	run stat "$id" /workspace/big.bin
	expect_eq "write 48 MiB: size in the sandbox" "$(cat "$tmp/out")" "file $((48 << 20)) bytes"
	rss=$(maxrss "$cli" read "$id" /workspace/big.bin)
	if cmp -s "$tmp/maxrss.out" "$tmp/big"; then ok "read without --max-bytes: the whole 48 MiB file"; else no "read without --max-bytes: the whole 48 MiB file" "$(wc -c <"$tmp/maxrss.out") bytes"; fi
	if [ $((rss - base)) -lt $((16 << 10)) ]; then ok "read 48 MiB: RSS growth $((rss - base)) KiB < 16 MiB"; else no "read 48 MiB with bounded memory" "max RSS ${rss} KiB, 1 KiB read ${base} KiB"; fi
	head -c $((20 << 20)) /dev/urandom >"$tmp/big"
	cat "$tmp/big" | "$cli" write "$id" /workspace/big2.bin --json >"$tmp/out" 2>"$tmp/err"
	expect_eq "write 20 MiB from a pipe: bytes" "$(jq_out bytes)" "$((20 << 20))"
	run exec "$id" 'sha256sum /workspace/big2.bin | cut -d" " -f1'
	expect_eq "write from a pipe: the bytes arrived" "$(cat "$tmp/out")" "$(sha256sum <"$tmp/big" | cut -d' ' -f1)"
	rm -f "$tmp/big" "$tmp/maxrss.out"
	run write "$id" /workspace/x "$tmp/does-not-exist"
	expect_rc "write from a missing file exits 2" 2
	expect_grep "write from a missing file says why" "cannot read '$tmp/does-not-exist': No such file or directory" "$tmp/err"

	"$cli" read "$id" /workspace/big2.bin 2>"$tmp/err" | head -c 10 >/dev/null
	expect_eq "read | head: exit 141" "${PIPESTATUS[0]}" "141"
	expect_eq "read | head: nothing on stderr" "$(cat "$tmp/err")" ""
	run exec "$id" 'rm -f /workspace/big.bin /workspace/big2.bin /workspace/small.bin'

	run read "$id" /workspace/nope.txt
	expect_rc "read missing exits 3" 3
	expect_eq "read missing says no such file" "$(cat "$tmp/err")" "sandbox-e2b read: /workspace/nope.txt: no such file"
	run read "$id" /workspace/dir
	expect_rc "read directory exits 3" 3
	expect_eq "read directory says it is one" "$(cat "$tmp/err")" \
		"sandbox-e2b read: /workspace/dir is a directory; list it with 'sandbox-e2b ls $id /workspace/dir'"
	run write "$id" /etc/passwd "$tmp/a.txt"
	expect_rc "write where the user may not exits 1" 1
	expect_eq "write refused: permission denied for the path, no script name" "$(head -n 1 "$tmp/err")" \
		"sandbox-e2b write: cannot write /etc/passwd: permission denied for /etc/passwd (SBX_ESANDBOX)"
	run read "$id" relative/path
	expect_rc "read relative path exits 2" 2

	run stat "$id" /workspace/dir/a.txt
	expect_rc "stat exits 0" 0
	expect_eq "stat file" "$(cat "$tmp/out")" "file 18 bytes"
	run stat "$id" /workspace/dir --json
	expect_eq "stat --json is_dir" "$(jq_out is_dir)" "true"
	expect_eq "stat --json exists" "$(jq_out exists)" "true"
	run stat "$id" /workspace/nope --json
	expect_rc "stat missing exits 3" 3
	expect_eq "stat --json missing" "$(jq_out exists)" "false"
	run stat "$id" /workspace/nope
	expect_rc "stat missing (human) exits 3" 3
	expect_eq "stat missing names the tool, the command and the path" "$(cat "$tmp/err")" \
		"sandbox-e2b stat: /workspace/nope: no such file or directory"

	run ls "$id" /workspace/dir
	expect_rc "ls exits 0" 0
	expect_eq "ls lists the file" "$(cat "$tmp/out")" "-           18 a.txt"
	run exec "$id" 'mkdir -p /workspace/lsd/sub && ln -sf a /workspace/lsd/link && : > /workspace/lsd/empty'
	run ls "$id" /workspace/lsd
	expect_eq "ls: types, sizes, sorted names" "$(cat "$tmp/out")" "$(printf -- '-            0 empty\nl            1 link\nd %12s sub/' "$(cut -d' ' -f1 <<<"$("$cli" stat "$id" /workspace/lsd/sub | sed 's/directory //')")")"
	run ls "$id" /workspace/lsd --json
	expect_eq "ls --json first entry" "$("$jget" entries.0.name <"$tmp/out")" "empty"
	expect_eq "ls --json type" "$("$jget" entries.2.type <"$tmp/out")" "dir"
	expect_eq "ls --json truncated" "$("$jget" truncated <"$tmp/out")" "false"
	run ls "$id" /workspace/nope
	expect_rc "ls missing exits 3" 3
	run ls "$id" /workspace/dir/a.txt
	expect_rc "ls of a file exits 1" 1
	expect_eq "ls of a file says so, with its own hint" "$(cat "$tmp/err")" "sandbox-e2b ls: cannot list /workspace/dir/a.txt: it is a file, not a directory (SBX_ESANDBOX)
sandbox-e2b ls: read a file with 'sandbox-e2b read ID PATH', or give ls its directory"

	run exec "$id" -- 'stat -c %U /workspace/dir/a.txt'
	expect_eq "written as the sandbox user" "$(cat "$tmp/out")" "sandbox"
	echo skill >"$tmp/s.md"
	run write "$id" /skills/s.md "$tmp/s.md"
	expect_rc "write /skills exits 0" 0
	run exec "$id" -- 'stat -c "%U %a" /skills/s.md'
	expect_eq "/skills written by root 0644" "$(cat "$tmp/out")" "root 644"
}

test_commands() {
	start_fake
	if tr '\0' ' ' <"/proc/$fake_pid/cmdline" | grep -q -- "$SECRET"; then
		no "fake-e2b's command line has no API key" "it is there"
	else
		ok "fake-e2b's command line has no API key"
	fi
	expect_eq "the API key file is 0600" "$(stat -c %a "$tmp/api-key")" "600"
	run create cli-test-a --json
	expect_rc "create exits 0" 0
	local id
	id=$(jq_out id)
	expect_eq "create --json name" "$(jq_out name)" "cli-test-a"
	if [[ "$id" =~ ^[a-zA-Z0-9-]+$ ]]; then ok "create --json id"; else no "create --json id" "$id"; fi

	run create 'bad name!'
	expect_rc "create invalid name exits 2" 2
	expect_eq "create invalid name: the rule" "$(head -n 1 "$tmp/err")" \
		"sandbox-e2b create: invalid sandbox name: bad name! (a name is 1 to 101 letters, digits, '_', '.' or '-', starting with a letter or digit: ^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,100}\$) (SBX_EINVALID)"
	run create x --egress open
	expect_rc "create open egress without allowOpenEgress exits 2" 2
	expect_grep "open egress refusal explained" "allowOpenEgress" "$tmp/err"
	expect_grep "open egress hint says what to set" 'set "allowOpenEgress": true in the deployment config' "$tmp/err"
	run create x --egress allowlist --allow-host http://pypi.org
	expect_rc "allow host URL exits 2" 2
	expect_grep "allow host URL: the library's reason" "CIDR" "$tmp/err"
	expect_grep "allow host URL: hint" "'http://pypi.org' is a URL; allow hosts are hostnames" "$tmp/err"
	SANDBOX_E2B_CONFIG="{\"apiKey\":\"$SECRET\",\"template\":\"capybara-sandbox\",\"apiUrl\":\"$url\",\"domainAllowlist\":false}" \
		run create cli-test-warn --egress allowlist --allow-host pypi.org
	expect_rc "degraded allowlist still creates" 0
	expect_grep "library warning printed once prefixed" "^sandbox-e2b: warn: domain allowlists" "$tmp/err"
	run destroy "$(cat "$tmp/out")"

	run create cli-test-egress --egress allowlist --allow-host pypi.org --allow-host '*.pythonhosted.org' --cpu 2 --memory-mb 4096
	expect_rc "create with an allowlist exits 0" 0
	run destroy "$(cat "$tmp/out")"
	run create cli-test-egress --egress allowlist --allow-host 'Not A Host'
	expect_rc "create with a bad allow host exits 2" 2
	run create cli-test-egress --allow-host pypi.org
	expect_rc "--allow-host without allowlist exits 2" 2
	run create cli-test-egress --cpu 0
	expect_rc "--cpu 0 exits 2" 2

	test_exec "$id"
	test_files "$id"

	run exec "$id" -- 'echo kept > /workspace/keep.txt'
	run suspend "$id"
	expect_rc "suspend exits 0" 0
	run suspend "$id" --json
	expect_eq "suspend twice is ok" "$(jq_out ok)" "true"
	run resume "$id"
	expect_rc "resume exits 0" 0
	expect_eq "resume prints resumed" "$(cat "$tmp/out")" "resumed"
	run read "$id" /workspace/keep.txt
	expect_eq "files survive suspend/resume" "$(cat "$tmp/out")" "kept"

	# list and info
	run list --json
	expect_rc "list --json exits 0" 0
	expect_grep "list --json has the sandbox" "\"id\":\"$id\",\"name\":\"cli-test-a\",\"state\":\"running\"" "$tmp/out"
	run list --name cli-test-a --json
	expect_eq "list --name: one sandbox" "$(jq_out 0.id)" "$id"
	expect_eq "list --name: only that one" "$(jq_out 1.id)" "<missing>"
	run list --name cli-test-a
	expect_grep "list (human) shows id, name, state" "^$id  *cli-test-a  *running " "$tmp/out"
	run list --state paused --json
	expect_eq "list --state paused: not the running one" "$(grep -c "$id" "$tmp/out")" "0"
	run list --state sideways
	expect_rc "list --state bad exits 2" 2
	run info "$id" --json
	expect_rc "info exits 0" 0
	expect_eq "info --json id" "$(jq_out id)" "$id"
	expect_eq "info --json name" "$(jq_out name)" "cli-test-a"
	expect_eq "info --json state" "$(jq_out state)" "running"
	run suspend "$id"
	run list --state paused --name cli-test-a --json
	expect_eq "list --state paused after suspend" "$(jq_out 0.state)" "paused"
	run info "$id"
	expect_grep "info (human) after suspend" "^state  *paused$" "$tmp/out"
	run info "$id" --json
	expect_eq "info leaves a paused sandbox paused" "$(jq_out state)" "paused"
	run resume "$id"

	run destroy "$id"
	expect_rc "destroy exits 0" 0
	run info "$id"
	expect_rc "info of a destroyed sandbox exits 3" 3
	expect_grep "info of a destroyed sandbox: hint" "no sandbox with that id; list them with 'sandbox-e2b list'" "$tmp/err"
	run resume "$id" --json
	expect_rc "resume after destroy exits 3" 3
	expect_eq "resume --json gone" "$(jq_out status)" "gone"
	run destroy "$id"
	expect_rc "destroy of a missing sandbox exits 0" 0
	expect_eq "destroy of a missing sandbox is truthful" "$(cat "$tmp/err")" "destroyed (or it was already gone)"
	run suspend "$id"
	expect_rc "suspend of a missing sandbox exits 0" 0
	expect_eq "suspend of a missing sandbox is truthful" "$(cat "$tmp/err")" "suspended (or it was already paused or gone)"
	run exec "$id" --json -- true
	expect_rc "exec on a destroyed sandbox exits 1" 1
	expect_eq "--json error code" "$(jq_out error.code)" "SBX_EGONE"
	expect_grep "gone error says what next" "create" "$tmp/err"

	# create by name replaces, destroy-by-name deletes
	run create cli-test-b
	local b1
	b1=$(cat "$tmp/out")
	run create cli-test-b
	local b2
	b2=$(cat "$tmp/out")
	run resume "$b1"
	expect_rc "create replaces the same name" 3
	run destroy-by-name cli-test-b --json
	expect_rc "destroy-by-name exits 0" 0
	expect_eq "destroy-by-name --json" "$(jq_out ok)" "true"
	run resume "$b2"
	expect_rc "destroy-by-name deleted it" 3

	# every config source reaches the same server
	local cfg=$SANDBOX_E2B_CONFIG
	printf '%s' "$cfg" >"$tmp/cfg.json"
	(unset SANDBOX_E2B_CONFIG SANDBOX_E2B_ENVD_URL
	 run create cli-test-c --config "$tmp/cfg.json" --envd-url "$url"
	 expect_rc "--config FILE and --envd-url work" 0
	 c=$(cat "$tmp/out")
	 E2B_API_KEY=$SECRET E2B_API_URL=$url run exec "$c" --template capybara-sandbox --envd-url "$url" -- echo via-env
	 expect_eq "E2B_API_KEY + E2B_API_URL + --template work" "$(cat "$tmp/out")" "via-env"
	 E2B_API_KEY=$SECRET E2B_API_URL=$url E2B_SANDBOX_URL=$url run exec "$c" --template capybara-sandbox -- echo sdk-env
	 expect_eq "E2B_SANDBOX_URL means --envd-url" "$(cat "$tmp/out")" "sdk-env"
	 E2B_API_KEY=$SECRET E2B_API_URL=$url E2B_TEMPLATE=capybara-sandbox E2B_DEBUG=true E2B_SANDBOX_URL=$url run stat "$c" /workspace
	 expect_rc "E2B_DEBUG=true: the command still works" 0
	 expect_grep "E2B_DEBUG=true: one line per HTTP request" "^sandbox-e2b: debug: http method=POST path=/v2/sandboxes/$c/connect status=200 ms=[0-9]*$" "$tmp/err"
	 expect_grep "E2B_DEBUG=true: envd requests too" "^sandbox-e2b: debug: http method=POST path=/process.Process/Start status=200 ms=" "$tmp/err"
	 no_secret "E2B_DEBUG=true"
	 E2B_API_KEY=$SECRET E2B_API_URL=$url E2B_TEMPLATE=capybara-sandbox E2B_SANDBOX_URL=$url run stat "$c" /workspace
	 if grep -q "debug: http" "$tmp/err"; then no "no debug lines without -v or E2B_DEBUG"; else ok "no debug lines without -v or E2B_DEBUG"; fi
	 E2B_API_KEY=$SECRET E2B_API_URL=$url E2B_TEMPLATE=capybara-sandbox E2B_SANDBOX_URL=$url run stat "$c" /workspace -v
	 expect_grep "-v: one line per HTTP request" "^sandbox-e2b: debug: http method=POST path=/v2/sandboxes/$c/connect status=200" "$tmp/err"
	 no_secret "-v"
	 # only create needs a template
	 E2B_API_KEY=$SECRET E2B_API_URL=$url run list --json
	 expect_rc "list needs no template" 0
	 expect_grep "list without a template lists the sandbox" "\"id\":\"$c\"" "$tmp/out"
	 E2B_API_KEY=$SECRET E2B_API_URL=$url E2B_SANDBOX_URL=$url run exec "$c" -- echo no-template
	 expect_eq "exec needs no template" "$(cat "$tmp/out")" "no-template"
	 E2B_API_KEY=$SECRET E2B_API_URL=$url run create cli-test-nt
	 expect_rc "create without a template exits 2" 2
	 expect_eq "create without a template says so" "$(head -n 1 "$tmp/err")" "sandbox-e2b: invalid deployment config: template: required"
	 # the control plane answers, envd's default address does not resolve: the hint names --envd-url
	 E2B_API_KEY=$SECRET E2B_API_URL=$url E2B_TEMPLATE=capybara-sandbox E2B_DOMAIN=sbx.invalid run exec "$c" -- true
	 expect_rc "envd unreachable exits 1" 1
	 expect_grep "envd unreachable: the error names envd's host" "^sandbox-e2b exec: .*49983-$c\.sbx\.invalid.* (SBX_ENETWORK)$" "$tmp/err"
	 expect_eq "envd unreachable: the hint names --envd-url" "$(tail -n 1 "$tmp/err")" \
	     "sandbox-e2b exec: could not reach envd at https://49983-<sandbox id>.<domain>; check the network and domain / E2B_DOMAIN, or set --envd-url / SANDBOX_E2B_ENVD_URL to your envd address (fake-e2b: its own URL)"
	 # the control plane does not answer
	 E2B_API_KEY=$SECRET E2B_API_URL=http://127.0.0.1:1 E2B_TEMPLATE=capybara-sandbox run list
	 expect_rc "API unreachable exits 1" 1
	 expect_eq "API unreachable: the hint names apiUrl, domain and --envd-url" "$(tail -n 1 "$tmp/err")" \
	     "sandbox-e2b list: could not reach the server; check the network and apiUrl / E2B_API_URL (or domain / E2B_DOMAIN), and --envd-url / SANDBOX_E2B_ENVD_URL for a local or self-hosted envd"
	 E2B_API_KEY=$SECRET E2B_API_URL=$url E2B_TEMPLATE=capybara-sandbox SANDBOX_E2B_ENVD_URL=$url run destroy "$c"
	 expect_rc "E2B_TEMPLATE + SANDBOX_E2B_ENVD_URL work" 0
	 echo "$pass $fail" >"$tmp/counts")
	read -r pass fail <"$tmp/counts"

	if [ -n "$hello" ]; then
		"$hello" >"$tmp/out" 2>"$tmp/err"
		rc=$?
		expect_rc "examples/hello exits 0" 0
		expect_eq "examples/hello prints hello" "$(cat "$tmp/out")" "hello"
	fi
	if grep -q "$SECRET" "$tmp/all"; then no "API key printed somewhere in the session"; else ok "API key printed nowhere in the session"; fi
	finish
}

# ---- demo ---------------------------------------------------------------------------
# interrupt_demo PID LINE NAME: once LINE is in $tmp/int.out, Ctrl-C (SIGINT) to the demo
# started in the background as PID; it must end within 120 s (it cleans up first). Its exit
# code goes to $rc. The caller empties int.out before starting the demo: the job's own
# `>int.out` runs in the forked child, maybe after this shell has grepped the previous run's
# output, and a SIGINT sent then reaches a process that has not installed its handler yet (an
# asynchronous job of a non-interactive shell starts with SIGINT ignored): the signal was
# lost, the demo held at its gate forever and the test timed out.
interrupt_demo() {
	local p=$1 line=$2 name=$3 i
	for i in $(seq 1 2400); do
		grep -qF -- "$line" "$tmp/int.out" && break
		sleep 0.05
	done
	kill -INT "$p"
	for i in $(seq 1 1200); do
		kill -0 "$p" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$p" 2>/dev/null; then
		no "$name: the demo still runs 120 s after Ctrl-C"
		kill -KILL "$p"
		# and its fake-e2b, which would keep ctest's stderr open
		i=$(sed -n 's/.*start fake-e2b.*(pid \([0-9]*\)).*/\1/p' "$tmp/int.out")
		[ -n "$i" ] && kill -TERM "$i" 2>/dev/null
	fi
	wait "$p"
	rc=$?
}

test_demo() {
	unset SANDBOX_E2B_CONFIG E2B_API_KEY E2B_TEMPLATE E2B_API_URL E2B_DOMAIN
	cd "$tmp" || exit 1
	run demo --fake-e2b "$fake"
	expect_rc "demo exits 0" 0
	expect_grep "demo passed" "demo passed" "$tmp/out"
	expect_grep "demo built the program" "build (make)" "$tmp/out"
	expect_grep "demo shows the report" "word frequencies of input.txt" "$tmp/out"
	expect_grep "demo killed by tag" "kill-tagged bg" "$tmp/out"
	expect_grep "demo files survived resume" "unchanged" "$tmp/out"
	run demo --json --name cli-test-demo --fake-e2b "$fake"
	expect_rc "demo --json exits 0" 0
	expect_eq "demo --json passed" "$(jq_out passed)" "true"
	expect_eq "demo --json no failed step" "$(jq_out failed_step)" "null"
	jq_out report >"$tmp/report"
	expect_grep "demo --json carries the report" "total words: 166" "$tmp/report"
	# The demo's fake-e2b reads its API key from a 0600 file (removed once it listens), never
	# from its command line, which every local user sees in ps
	mkdir -p "$tmp/kd"
	: >"$tmp/int.out" # see interrupt_demo
	TMPDIR=$tmp/kd SANDBOX_E2B_DEMO_HOLD_AFTER="start fake-e2b" SANDBOX_E2B_DEMO_GATE=$tmp/never \
		"$cli" demo --fake-e2b "$fake" >"$tmp/int.out" 2>"$tmp/int.err" &
	local dpid=$! kpid i
	for i in $(seq 1 2400); do
		grep -qF -- "start fake-e2b" "$tmp/int.out" && break
		sleep 0.05
	done
	kpid=$(sed -n 's/.*start fake-e2b.*(pid \([0-9]*\)).*/\1/p' "$tmp/int.out")
	if [ -n "$kpid" ] && tr '\0' ' ' <"/proc/$kpid/cmdline" | grep -q -- "--api-key-file $tmp/kd/sandbox-e2b-demo-.*/api-key" &&
		! tr '\0' ' ' <"/proc/$kpid/cmdline" | grep -q -- "e2b_demo"; then
		ok "the demo's fake-e2b has its key in a file, not on its command line"
	else
		no "the demo's fake-e2b has its key in a file, not on its command line" "pid '$kpid': $(tr '\0' ' ' <"/proc/$kpid/cmdline" 2>/dev/null | sed 's/e2b_demo[0-9a-f]*/KEY/g')"
	fi
	expect_eq "the demo's key file is gone once fake-e2b listens" "$(ls -A "$tmp/kd")" ""
	interrupt_demo "$dpid" "start fake-e2b" "demo held after start fake-e2b"
	expect_eq "demo held after start fake-e2b exits 130" "$rc" "130"
	# Ctrl-C mid-session: exit 130, and the demo still stops its fake-e2b
	: >"$tmp/int.out" # see interrupt_demo
	SANDBOX_E2B_DEMO_HOLD_AFTER="start bg command" SANDBOX_E2B_DEMO_GATE=$tmp/never \
		"$cli" demo --fake-e2b "$fake" >"$tmp/int.out" 2>"$tmp/int.err" &
	interrupt_demo $! "start bg command" "interrupted demo"
	expect_eq "demo interrupted exits 130" "$rc" "130"
	local fpid
	fpid=$(sed -n 's/.*start fake-e2b.*(pid \([0-9]*\)).*/\1/p' "$tmp/int.out")
	if [ -n "$fpid" ] && ! kill -0 "$fpid" 2>/dev/null; then ok "interrupted demo stopped fake-e2b"; else no "interrupted demo stopped fake-e2b" "pid '$fpid'"; fi
	expect_grep "interrupted demo says interrupted" "interrupted" "$tmp/int.err"
	if grep -q "never showed up\|:  (" "$tmp/int.err"; then no "interrupted demo: no misleading message" "$(cat "$tmp/int.err")"; else ok "interrupted demo: no misleading message"; fi
	# Ctrl-C at a step boundary fails the demo with 130. The demo's test hook holds it
	# after the step's line until the gate file exists (never made here), so the signal
	# always lands at that boundary, however fast the following steps are.
	local m
	for m in "local fake-e2b" "start fake-e2b" "create sandbox" "write program" "build (make)" "read report" "stat report" "suspend" "resume" "check gone"; do
		: >"$tmp/int.out" # see interrupt_demo
		SANDBOX_E2B_DEMO_HOLD_AFTER=$m SANDBOX_E2B_DEMO_GATE=$tmp/never \
			"$cli" demo --fake-e2b "$fake" >"$tmp/int.out" 2>"$tmp/int.err" &
		interrupt_demo $! "$m" "Ctrl-C after '$m'"
		expect_eq "Ctrl-C after '$m' exits 130" "$rc" "130"
		if grep -q "demo passed" "$tmp/int.out"; then no "Ctrl-C after '$m': not passed"; else ok "Ctrl-C after '$m': not passed"; fi
		expect_grep "Ctrl-C after '$m' says interrupted" "interrupted" "$tmp/int.err"
		if grep -q "never showed up\|:  (" "$tmp/int.err"; then no "Ctrl-C after '$m': no misleading message" "$(cat "$tmp/int.err")"; else ok "Ctrl-C after '$m': no misleading message"; fi
	done
	# The hook's gate: once the file exists the held demo goes on and passes
	: >"$tmp/gate"
	SANDBOX_E2B_DEMO_HOLD_AFTER=suspend SANDBOX_E2B_DEMO_GATE=$tmp/gate run demo --fake-e2b "$fake"
	expect_rc "demo held at an open gate passes" 0
	FAKE_E2B=/nonexistent/fake-e2b run demo
	expect_rc "demo without fake-e2b exits 1" 1
	expect_grep "demo names the failed step" "start fake-e2b" "$tmp/err"
	finish
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

# ---- paths: rm, mkdir, mv, stat --long, --user root ------------------------------------
test_paths() {
	start_fake
	run create cli-test-paths
	expect_rc "paths: create exits 0" 0
	expect_eq "create of a new name: no notice" "$(cat "$tmp/err")" ""
	local first
	first=$(cat "$tmp/out")
	run create cli-test-paths
	expect_rc "paths: create again exits 0" 0
	expect_eq "create says it replaced the same-name sandbox" "$(cat "$tmp/err")" "sandbox-e2b create: replaced 1 sandbox named cli-test-paths ($first)"
	local id
	id=$(cat "$tmp/out")

	run mkdir "$id" /workspace/p/a/b --json
	expect_rc "mkdir exits 0" 0
	expect_eq "mkdir --json created" "$(jq_out created)" "true"
	run mkdir "$id" /workspace/p/a/b
	expect_rc "mkdir of an existing directory exits 0" 0
	expect_eq "mkdir existing says so" "$(cat "$tmp/err")" "sandbox-e2b mkdir: /workspace/p/a/b already exists"
	run exec "$id" -- 'printf abc > /workspace/p/f; chmod 0640 /workspace/p/f; touch -d @1700000000.5 /workspace/p/f; ln -s f /workspace/p/l'
	run mkdir "$id" /workspace/p/f
	expect_rc "mkdir over a file exits 1" 1
	expect_grep "mkdir over a file says why" "cannot make directory /workspace/p/f: a file is in the way (SBX_ESANDBOX)" "$tmp/err"
	run mkdir "$id" /skills/cli
	expect_rc "mkdir in /skills as the sandbox user exits 1" 1
	expect_grep "mkdir denied" "permission denied for /skills/cli" "$tmp/err"
	run mkdir "$id" /skills/cli --user root
	expect_rc "mkdir --user root exits 0" 0
	run mkdir "$id" /x --user admin
	expect_rc "--user admin exits 2" 2
	expect_eq "--user admin: the rule" "$(head -n 1 "$tmp/err")" "sandbox-e2b mkdir: --user must be 'sandbox' or 'root', got 'admin'"

	run stat "$id" /workspace/p/f --long
	expect_rc "stat --long exits 0" 0
	expect_eq "stat --long fields" "$(cat "$tmp/out")" "path: /workspace/p/f
type: file
size: 3
mode: 0640 (-rw-r-----)
owner: sandbox
group: sandbox
mtime: 2023-11-14T22:13:20.500Z"
	run stat "$id" /workspace/p/l -l --json
	expect_eq "stat --long --json type of a symlink" "$(jq_out type)" "symlink"
	expect_eq "stat --long --json symlink_target" "$(jq_out symlink_target)" "f"
	expect_eq "stat --long --json permissions" "$(jq_out permissions)" "Lrwxrwxrwx"
	run stat "$id" /skills/cli --long --user root --json
	expect_eq "stat --long --user root owner" "$(jq_out owner)" "root"
	run stat "$id" /workspace/p/none --long
	expect_rc "stat --long missing exits 3" 3
	expect_eq "stat --long missing says so" "$(cat "$tmp/err")" "sandbox-e2b stat: /workspace/p/none: no such file or directory"
	run stat "$id" /workspace/p/f --user root
	expect_rc "stat --user without --long exits 2" 2

	run mv "$id" /workspace/p/f /workspace/p/n/g --json
	expect_rc "mv exits 0" 0
	expect_eq "mv --json path is TO" "$(jq_out path)" "/workspace/p/n/g"
	expect_eq "mv --json size" "$(jq_out size)" "3"
	run mv "$id" /workspace/p/f /workspace/p/h
	expect_rc "mv of a missing path exits 3" 3
	expect_eq "mv missing says so" "$(cat "$tmp/err")" "sandbox-e2b mv: /workspace/p/f: no such file or directory"

	run rm "$id" /workspace/p/a
	expect_rc "rm of a tree exits 0" 0
	expect_eq "rm prints nothing" "$(cat "$tmp/out" "$tmp/err")" ""
	run stat "$id" /workspace/p/a
	expect_rc "rm removed the tree" 3
	run rm "$id" /workspace/p/a --json
	expect_rc "rm of a missing path exits 0" 0
	expect_eq "rm --json ok" "$(jq_out ok)" "true"
	run rm "$id" /skills/cli
	expect_rc "rm of root's directory as the sandbox user exits 1" 1
	run rm "$id" /skills/cli --user root
	expect_rc "rm --user root exits 0" 0
	run rm "$id" /
	expect_rc "rm / exits 2" 2

	run exec --user root "$id" -- 'id -un; echo $HOME'
	expect_rc "exec --user root exits 0" 0
	expect_eq "exec --user root runs as root" "$(cat "$tmp/out")" "root
/root"
	run exec --user root --background "$id" -- 'exec sleep 2222'
	expect_rc "exec --user root --background exits 0" 0
	run exec --user root "$id" -- 'ps -o user= -C sleep'
	expect_eq "the background command runs as root" "$(cat "$tmp/out")" "root"
	run exec --user nobody "$id" -- true
	expect_rc "exec --user nobody exits 2" 2

	run set-timeout "$id" 90s --json
	expect_rc "set-timeout exits 0" 0
	expect_eq "set-timeout --json" "$(cat "$tmp/out")" "{\"ok\":true,\"id\":\"$id\",\"timeout_seconds\":90}"
	run set-timeout "$id" 1500ms
	expect_eq "set-timeout rounds up to whole seconds" "$(cat "$tmp/err")" "the sandbox now ends in 2 s"
	run set-timeout "$id" 25h
	expect_rc "set-timeout over 24h exits 2" 2
	run set-timeout i0missing000000000000 1m
	expect_rc "set-timeout of a missing sandbox exits 1 (SBX_EGONE, as exec's)" 1
	expect_grep "set-timeout of a missing sandbox says it is gone" "(SBX_EGONE)" "$tmp/err"
	run create cli-test-life --timeout 5m --env MODE=ci --metadata owner=ana
	expect_rc "create --timeout --env --metadata exits 0" 0
	local lid
	lid=$(cat "$tmp/out")
	run exec "$lid" -- 'echo $MODE'
	expect_eq "create --env reaches the commands" "$(cat "$tmp/out")" "ci"
	run destroy "$lid"
	run create cli-test-life --metadata capybara-sandbox-name=x
	expect_rc "create with the reserved metadata key exits 2" 2
	expect_grep "the reserved key is named" "metadata key capybara-sandbox-name is reserved for the name" "$tmp/err"
	run create cli-test-life --env NOEQUALS
	expect_rc "create --env without = exits 2" 2

	SANDBOX_E2B_CONFIG="{\"apiKey\":\"$SECRET\",\"template\":\"capybara-sandbox\",\"apiUrl\":\"$url\",\"domain\":\"e2b.localhost\"}" \
		run host "$id" 8080
	expect_rc "host exits 0" 0
	expect_eq "host prints the URL" "$(cat "$tmp/out")" "https://8080-$id.e2b.localhost"
	SANDBOX_E2B_CONFIG="{\"apiKey\":\"$SECRET\",\"template\":\"capybara-sandbox\",\"apiUrl\":\"$url\",\"domain\":\"e2b.localhost\"}" \
		run host "$id" 8080 --json
	expect_eq "host --json" "$(cat "$tmp/out")" "{\"url\":\"https://8080-$id.e2b.localhost\",\"hostname\":\"8080-$id.e2b.localhost\",\"port\":8080,\"traffic_token\":null}"
	run host "$id" 0
	expect_rc "host PORT 0 exits 2" 2
	run host "$id" 65536
	expect_rc "host PORT 65536 exits 2" 2

	run metrics "$id" --json
	expect_rc "metrics exits 0" 0
	expect_eq "metrics --json id" "$(jq_out id)" "$id"
	run metrics "$id"
	expect_eq "metrics: the header line" "$(head -n 1 "$tmp/out")" "TIME                 CPUS   CPU%           MEM MiB          DISK MiB"
	run metrics "$id" --since 0s
	expect_rc "metrics --since 0s exits 2" 2
	run list --all
	expect_rc "list --all exits 0" 0
	expect_eq "list: END and AGE columns" "$(head -n 1 "$tmp/out" | tr -s ' ')" "ID NAME STATE STARTED END AGE"
	if grep -Eq "^$id +cli-test-paths +running +[0-9T:.-]+Z +[0-9T:.-]+Z +[0-9]+[smhd]\$" "$tmp/out"; then
		ok "list: the sandbox's row has its end and age"
	else
		no "list: the sandbox's row has its end and age"
	fi
	run exec cli-test-paths -- 'echo by-name'
	expect_eq "exec NAME: a name where the id goes" "$(cat "$tmp/out")" "by-name"
	run info cli-test-paths --json
	expect_eq "info NAME is that sandbox" "$(jq_out id)" "$id"
	run info i0nosuchname00000000
	expect_rc "info of a word no sandbox has as a name: taken as an id, not found" 3
	# two sandboxes with one name (made behind the tool's back): never a guess
	local hp=${url#http://} body='{"templateID":"capybara-sandbox","secure":true,"metadata":{"capybara-sandbox-name":"twin"}}'
	for _ in 1 2; do
		exec 4<>"/dev/tcp/${hp%:*}/${hp##*:}"
		printf 'POST /v2/sandboxes HTTP/1.1\r\nHost: %s\r\nX-API-Key: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
			"$hp" "$SECRET" "${#body}" "$body" >&4
		head -1 <&4 >/dev/null
		exec 4<&-
	done
	run exec twin -- true
	expect_rc "an ambiguous name exits 2" 2
	expect_grep "an ambiguous name says so" "2 sandboxes are named 'twin' (" "$tmp/err"
	run destroy-by-name twin
	expect_eq "__complete an ID: ids and names" "$("$cli" __complete exec cli-test-p)" "cli-test-paths"
	expect_eq "__complete an ID by its start" "$("$cli" __complete info "${id:0:6}")" "$id"
	expect_eq "__complete destroy-by-name: names" "$("$cli" __complete destroy-by-name cli-test-p)" "cli-test-paths"
	expect_eq "__complete create NAME: no existing names" "$("$cli" __complete create cli-test-p)" ""
	expect_eq "__complete without config: nothing, quietly" "$(SANDBOX_E2B_CONFIG='' "$cli" __complete exec "" 2>&1)" ""
	# progress: on a terminal only (script(1) gives one), for a transfer that lasts
	script -qec "(printf a; sleep 1; printf b) | '$cli' write '$id' /workspace/slow.txt -" /dev/null >"$tmp/pty.out" 2>&1
	expect_grep "write on a terminal shows its progress" "write /workspace/slow.txt: 0.0 MiB" "$tmp/pty.out"
	expect_grep "and still says what it wrote" "wrote 2 bytes to /workspace/slow.txt" "$tmp/pty.out"
	(printf a; sleep 1; printf b) | "$cli" write "$id" /workspace/slow.txt - >"$tmp/out" 2>"$tmp/err"
	expect_eq "no progress without a terminal" "$(cat "$tmp/err")" "wrote 2 bytes to /workspace/slow.txt"
	run wait "$id" 99999
	expect_rc "wait of a missing process exits 3" 3
	expect_grep "wait of a missing process says so" "no command with that pid is running" "$tmp/err"
	run metrics i0missing000000000000
	expect_rc "metrics of a missing sandbox exits 1" 1
	expect_grep "metrics of a missing sandbox is SBX_EGONE" "(SBX_EGONE)" "$tmp/err"

	# the same calls through serve (bindings/protocol/methods.md)
	# (stdin stays open until the five answers are out: EOF would abort the calls in flight)
	: >"$tmp/out"
	{
		printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"make_dir","params":{"id":"'"$id"'","path":"/workspace/s/t"}}' \
			'{"jsonrpc":"2.0","id":2,"method":"path_info","params":{"id":"'"$id"'","path":"/workspace/none"}}' \
			'{"jsonrpc":"2.0","id":3,"method":"remove","params":{"id":"'"$id"'","path":"/workspace/s","user":"admin"}}' \
			'{"jsonrpc":"2.0","id":4,"method":"set_timeout","params":{"id":"'"$id"'","timeout_seconds":600}}' \
			'{"jsonrpc":"2.0","id":5,"method":"host","params":{"id":"'"$id"'","port":80}}'
		for _ in $(seq 1 600); do
			[ "$(wc -l <"$tmp/out")" -ge 5 ] && break
			sleep 0.1
		done
	} | "$cli" serve >"$tmp/out" 2>"$tmp/err"
	expect_eq "serve make_dir" "$(grep '"id":1' "$tmp/out")" '{"jsonrpc":"2.0","id":1,"result":{"path":"/workspace/s/t","created":true}}'
	expect_eq "serve path_info of a missing path" "$(grep '"id":2' "$tmp/out")" '{"jsonrpc":"2.0","id":2,"result":{"path":"/workspace/none","exists":false}}'
	expect_eq "serve set_timeout" "$(grep '"id":4' "$tmp/out")" '{"jsonrpc":"2.0","id":4,"result":{"ok":true,"id":"'"$id"'","timeout_seconds":600}}'
	expect_eq "serve host" "$(grep '"id":5' "$tmp/out")" '{"jsonrpc":"2.0","id":5,"result":{"url":"https://80-'"$id"'.e2b.app","hostname":"80-'"$id"'.e2b.app","port":80,"traffic_token":null}}'
	expect_eq "serve remove with a bad user" "$(grep '"id":3' "$tmp/out")" '{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"params.user must be \"sandbox\" or \"root\""}}'
	no_secret "paths"
	run destroy "$id"
	finish
}

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
