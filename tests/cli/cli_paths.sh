# tests/cli/cli_paths.sh: the paths section of tests/cli/cli_test.sh (which sources it):
# rm, mkdir, mv, stat --long and --user root against a fake-e2b started here.
# shellcheck shell=bash disable=SC2154 # cli, tmp, rc, pass... are cli_test.sh's

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
