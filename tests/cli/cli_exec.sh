# tests/cli/cli_exec.sh: exec against fake-e2b, part of the commands section of
# tests/cli/cli_test.sh (which sources it): exit codes, options, stdin, signals, faults.
# shellcheck shell=bash disable=SC2154 # cli, tmp, rc, pass... are cli_test.sh's

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

	# "invalid sandbox tag" is the seed's message; the tag rule is docs/contract.md "Definitions".
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
	# the kill signals and returns; envd lists the process until it is reaped: wait for that
	local listed=yes
	for _ in $(seq 300); do
		run ps "$id"
		grep -q "^$bpid " "$tmp/out" || { listed=no; break; }
		sleep 0.1
	done
	if [ "$listed" = yes ]; then no "kill ID PID ended it" "$(cat "$tmp/out")"; else ok "kill ID PID ended it"; fi
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
