# tests/cli/cli_demo.sh: the demo section of tests/cli/cli_test.sh (which sources it):
# sandbox-e2b demo, and Ctrl-C at each of its stages.
# shellcheck shell=bash disable=SC2154 # cli, tmp, rc, pass... are cli_test.sh's

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
	# -v: the client's requests as for E2B (docs/cli.md "Commands", the common options), and fake-e2b's log
	run demo -v --fake-e2b "$fake"
	expect_rc "demo -v exits 0" 0
	expect_grep "demo -v logs the client's requests" \
		"^sandbox-e2b: debug: http method=POST path=/v2/sandboxes status=201 ms=" "$tmp/err"
	expect_grep "demo -v shows fake-e2b's request log" "^fake-e2b: POST /v2/sandboxes 201" "$tmp/err"
	# without root: refused before fake-e2b starts (it could not isolate the sandbox)
	if setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$cli"; then
		setpriv --reuid=65534 --regid=65534 --clear-groups "$cli" demo --fake-e2b "$fake" \
			>"$tmp/out" 2>"$tmp/err" </dev/null
		rc=$?
		expect_rc "demo without root exits 1" 1
		expect_grep "demo without root says it needs root" \
			"step 1 'start fake-e2b' failed: the local fake-e2b needs root" "$tmp/err"
		expect_grep "demo without root started no fake-e2b" '\[ 1\] start fake-e2b .*FAILED' "$tmp/out"
	else
		ok "demo without root: SKIPPED ($cli is not nobody's to run)"
	fi
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
	# (its fake-e2b's default state directory is in that TMPDIR too: fake-e2b-*)
	expect_eq "the demo's key file is gone once fake-e2b listens" "$(find "$tmp/kd" -mindepth 1 -maxdepth 1 ! -name 'fake-e2b-*')" ""
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
