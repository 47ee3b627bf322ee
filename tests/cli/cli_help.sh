# tests/cli/cli_help.sh: the help section of tests/cli/cli_test.sh (which sources it):
# every --help and the usage errors.
# shellcheck shell=bash disable=SC2154 # cli, tmp, rc, pass... are cli_test.sh's

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
	expect_eq "not configured: the refusal's reason, as data" "$(jq_out error.data.config_reason)" \
		config_template
	expect_eq "not configured: the variables behind the config, as data" \
		"$(jq_out error.data.config_vars)" '["E2B_API_KEY","E2B_TEMPLATE","E2B_API_URL","E2B_DOMAIN"]'
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
