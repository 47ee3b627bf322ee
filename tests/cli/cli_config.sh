# tests/cli/cli_config.sh: the config section of tests/cli/cli_test.sh (which sources
# it): config check, the config's sources, the API key never printed.
# shellcheck shell=bash disable=SC2154 # cli, tmp, rc, pass... are cli_test.sh's

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

	# the hint follows the validator's reason (e2b_code), not words in the message
	printf '{"apiKey":"%s","template":"t","config is not valid JSON":1}' "$SECRET" >"$tmp/bad5.json"
	run config check "$tmp/bad5.json"
	expect_rc "a key named like the syntax error exits 2" 2
	expect_eq "a key named like the syntax error: the keys hint" "$(tail -n 1 "$tmp/err")" \
	    "sandbox-e2b: fix the keys named above (see docs/cli.md \"Configuration\"; check a file with 'sandbox-e2b config check FILE')"

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
