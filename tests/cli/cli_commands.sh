# tests/cli/cli_commands.sh: the commands section of tests/cli/cli_test.sh (which sources
# it): every subcommand against a fake-e2b started here, exit codes, --json; the file
# commands (test_files) here, exec in cli_exec.sh.
# shellcheck shell=bash disable=SC2154,SC2034 # cli, tmp, rc, pass... are cli_test.sh's (rc read there)

# maxrss CMD...: run CMD (stdout to $tmp/maxrss.out, exit code to $tmp/maxrss.rc) and
# print its peak resident set size in KiB (getrusage of the child)
maxrss() {
	python3 -c 'import resource, subprocess, sys
with open(sys.argv[1], "wb") as out:
    rc = subprocess.call(sys.argv[3:], stdout=out, stderr=subprocess.DEVNULL)
open(sys.argv[2], "w").write("%d\n" % rc)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$tmp/maxrss.out" "$tmp/maxrss.rc" "$@"
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
	# the template hint follows e2b_code, not the message: this path holds its words
	run write "$id" "/etc/lacks what sandbox-e2b needs" "$tmp/a.txt"
	expect_eq "write refused, a path holding the template error's words: the sandbox hint" "$(sed -n 2p "$tmp/err")" \
		"sandbox-e2b write: a step inside the sandbox failed; check the path and its permissions (the sandbox user owns /workspace; /skills is root's)"
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
	# the hint follows the library's data (e2b_code), not the message: this one ends as a file's does
	run exec --user root "$id" -- 'mkdir -m 700 "/tmp/d: it is a file, not a directory"'
	run ls "$id" "/tmp/d: it is a file, not a directory"
	expect_rc "ls of a root-only directory exits 1" 1
	expect_eq "ls of a directory named like the file error: the permission hint" "$(cat "$tmp/err")" "sandbox-e2b ls: cannot list /tmp/d: it is a file, not a directory: permission denied for /tmp/d: it is a file, not a directory (SBX_ESANDBOX)
sandbox-e2b ls: a step inside the sandbox failed; check the path and its permissions (the sandbox user owns /workspace; /skills is root's)"
	run ls "$id" /workspace/dir/a.txt --json
	expect_eq "ls --json of a file: the reason as data" "$(jq_out error.e2b_code)" "invalid_argument"

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
	# the hint follows the hosts themselves (the library's rule), not a word in the message
	run create 'allowHosts!' --egress allowlist --allow-host pypi.org
	expect_rc "a name holding allowHosts exits 2" 2
	expect_eq "a name holding allowHosts: no allow host hint" "$(grep -c 'allow hosts are hostnames' "$tmp/err")" 0
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
	 # only create (and demo) need a template
	 E2B_API_KEY=$SECRET E2B_API_URL=$url run list --json
	 expect_rc "list needs no template" 0
	 expect_grep "list without a template lists the sandbox" "\"id\":\"$c\"" "$tmp/out"
	 E2B_API_KEY=$SECRET E2B_API_URL=$url E2B_SANDBOX_URL=$url run exec "$c" -- echo no-template
	 expect_eq "exec needs no template" "$(cat "$tmp/out")" "no-template"
	 E2B_API_KEY=$SECRET E2B_API_URL=$url run create cli-test-nt
	 expect_rc "create without a template exits 2" 2
	 expect_eq "create without a template says so" "$(head -n 1 "$tmp/err")" "sandbox-e2b: invalid deployment config: template: required"
	 # the demo creates a sandbox too: no stand-in template sent to E2B, the same refusal
	 E2B_API_KEY=$SECRET E2B_API_URL=$url run demo
	 expect_rc "demo without a template exits 2" 2
	 expect_eq "demo without a template says so" "$(head -n 1 "$tmp/err")" "sandbox-e2b: invalid deployment config: template: required"
	 # the control plane answers, envd's default address does not resolve: the hint names --envd-url
	 E2B_API_KEY=$SECRET E2B_API_URL=$url E2B_TEMPLATE=capybara-sandbox E2B_DOMAIN=sbx.invalid run exec "$c" -- true
	 expect_rc "envd unreachable exits 1" 1
	 expect_grep "envd unreachable: the error names envd's host" "^sandbox-e2b exec: .*49983-$c\.sbx\.invalid.* (SBX_ENETWORK)$" "$tmp/err"
	 expect_eq "envd unreachable: the hint names --envd-url" "$(tail -n 1 "$tmp/err")" \
	     "sandbox-e2b exec: could not reach envd at https://49983-<sandbox id>.<domain>; check the network and domain / E2B_DOMAIN, or set --envd-url / SANDBOX_E2B_ENVD_URL to your envd address (fake-e2b: its own URL)"
	 E2B_API_KEY=$SECRET E2B_API_URL=$url E2B_TEMPLATE=capybara-sandbox E2B_DOMAIN=sbx.invalid run exec "$c" --json -- true
	 expect_eq "envd unreachable: e2b_code says envd" "$(jq_out error.e2b_code)" "unavailable"
	 # the control plane does not answer
	 E2B_API_KEY=$SECRET E2B_API_URL=http://127.0.0.1:1 E2B_TEMPLATE=capybara-sandbox run list
	 expect_rc "API unreachable exits 1" 1
	 expect_eq "API unreachable: the hint names apiUrl, domain and --envd-url" "$(tail -n 1 "$tmp/err")" \
	     "sandbox-e2b list: could not reach the server; check the network and apiUrl / E2B_API_URL (or domain / E2B_DOMAIN), and --envd-url / SANDBOX_E2B_ENVD_URL for a local or self-hosted envd"
	 E2B_API_KEY=$SECRET E2B_API_URL=http://127.0.0.1:1 E2B_TEMPLATE=capybara-sandbox run list --json
	 if grep -q '"e2b_code"' "$tmp/out"; then no "API unreachable: no e2b_code"; else ok "API unreachable: no e2b_code"; fi
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
