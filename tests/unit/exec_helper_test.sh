#!/usr/bin/env bash
# unit.exec_helper: templates/capybara-sandbox/capybara-exec (the exec helper) run on this host
# as the exec wrapper runs it (the session leader, after the pid file): the command's status,
# 128 + N for a signal, its own process group in the helper's session, an unblocked signal
# mask, the pid file removed, the SECONDS backstop that SIGKILLs the command's whole group, and
# 125 for a bad invocation; and with --session (as the exec line runs it, from a process that
# leads nothing): the session of its own, CTL.pid naming it (never written through a symlink or
# FIFO planted at its name), CTL.kill refusing the start, and a process group leader's start (a
# child makes the session, as `setsid -w`); with --mark (as the library starts it, envd's command
# itself) the marker on stderr before anything else, or nothing runs. Usage:
# exec_helper_test.sh HELPER
set -u
helper=$1
dir=$(mktemp -d /tmp/sbx-exec-helper.XXXXXX)
trap 'rm -rf "$dir"' EXIT
ctl=$dir/.capybara-exec-test
fails=0
check() { # name want got
  if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: want [$2], got [$3]"; fails=$((fails + 1)); fi
}
run() { # command seconds -> stdout in $out, status in $rc (in a session of its own, as the wrapper)
  : >"$ctl.pid"
  out=$(setsid -w "$helper" "$ctl" "$1" "$2")
  rc=$?
}

run '[[ 1 == 1 ]] && echo "$0 ok"; exit 7' 10
check "status kept, bash runs it" "7 /bin/bash ok" "$rc $out"
check "pid file removed" "gone" "$([ -e "$ctl.pid" ] && echo there || echo gone)"

run 'kill -TERM $$' 10
check "death by SIGTERM is 128 + 15" 143 "$rc"
run 'kill -SEGV $$' 10
check "death by SIGSEGV is 128 + 11" 139 "$rc"

# the command leads its own process group inside the helper's session; nothing blocked
run 'read -r -a f < /proc/$$/stat; echo "${f[4]} ${f[5]} $$ $PPID"; grep ^SigBlk: /proc/$$/status' 10
read -r pgid sid pid ppid blk <<<"$(printf '%s\n' "$out" | tr '\n' ' ' | sed 's/SigBlk://')"
check "own process group" "$pid" "$pgid"
check "in the helper's session" "$ppid" "$sid"
check "signal mask empty" 0000000000000000 "$blk"

# the backstop: after SECONDS the command's whole group is SIGKILLed, 137
start=$(date +%s)
run "sleep 300 & echo \$! > '$dir/bg'; sleep 300" 1
check "backstop exit 137" 137 "$rc"
check "backstop within 10 s" yes "$([ $(($(date +%s) - start)) -lt 10 ] && echo yes || echo no)"
bg=$(cat "$dir/bg")
state=gone
for _ in $(seq 100); do # the orphan is reaped by whoever adopted it
  read -r -a s 2>/dev/null <"/proc/$bg/stat" || { state=gone; break; }
  state=${s[2]}
  [ "$state" = Z ] && break
  sleep 0.05
done
check "the group's background process is dead" yes "$([ "$state" = gone ] || [ "$state" = Z ] && echo yes || echo "no ($state)")"
check "pid file removed after the backstop" "gone" "$([ -e "$ctl.pid" ] && echo there || echo gone)"

# --session: a session of its own led by the helper, whose pid CTL.pid holds while it runs
rm -f "$ctl.pid"
out=$("$helper" "$ctl" "read -r -a f < /proc/\$PPID/stat; echo \"\$(cat '$ctl.pid') \$PPID \${f[5]}\"" 10 --session 2>&1)
rc=$?
read -r pidfile hpid hsid <<<"$out"
check "--session: status" 0 "$rc"
check "--session: CTL.pid names the helper" "$hpid" "$pidfile"
check "--session: the helper leads its session" "$hpid" "$hsid"
check "--session: not the test's session" yes "$([ "$hsid" != "$(ps -o sid= $$ | tr -d ' ')" ] && echo yes || echo no)"
check "--session: pid file removed" "gone" "$([ -e "$ctl.pid" ] && echo there || echo gone)"
out=$("$helper" "$ctl" 'kill -KILL $$' 10 --session)
check "--session: death by SIGKILL is 128 + 9" 137 "$?"
# a kill that raced ahead of the start: 137, the command never runs
touch "$ctl.kill"
out=$("$helper" "$ctl" 'echo ran' 10 --session)
check "--session: CTL.kill refuses the start" "137 []" "$? [$out]"
rm -f "$ctl.kill" "$ctl.pid"
# CTL.pid planted first by another user of the box (its name is in the process list while the
# exec line starts): a symlink to a file is not followed, a FIFO not waited on; the helper's
# own file replaces them
echo keep >"$dir/victim"
ln -s "$dir/victim" "$ctl.pid"
out=$("$helper" "$ctl" "cat '$ctl.pid'; echo \$PPID" 10 --session)
read -r pidfile hpid <<<"$(printf '%s\n' "$out" | tr '\n' ' ')"
check "--session: a symlink at CTL.pid is not followed" keep "$(cat "$dir/victim")"
check "--session: CTL.pid replaced by the helper's own" "$hpid" "$pidfile"
mkfifo "$ctl.pid"
out=$(timeout 10 "$helper" "$ctl" 'echo ran' 10 --session)
check "--session: a FIFO at CTL.pid is not waited on" "0 [ran]" "$? [$out]"
rm -f "$ctl.pid" "$dir/victim"
# started as a process group leader (job control): a child makes the session, the helper waits
out=$(set -m; "$helper" "$ctl" "read -r -a f < /proc/\$PPID/stat; echo \"\$(cat '$ctl.pid') \$PPID \${f[5]}\"; exit 5" 10 --session & wait $!; echo "rc=$?")
read -r pidfile hpid hsid rcw <<<"$(printf '%s\n' "$out" | tr '\n' ' ')"
check "--session as a group leader: status through the wait" "rc=5" "$rcw"
check "--session as a group leader: CTL.pid names the session leader" "$hsid $hsid" "$pidfile $hpid"
check "--session as a group leader: pid file removed" "gone" "$([ -e "$ctl.pid" ] && echo there || echo gone)"

# --mark: the marker (NUL "capybara-exec" NUL) on stderr before anything of the command's,
# which then runs as with --session; without it nothing runs
rm -f "$ctl.pid"
"$helper" "$ctl" 'echo out; echo err >&2; exit 4' 10 --session --mark >"$dir/o" 2>"$dir/e"
check "--mark: status" 4 "$?"
check "--mark: stdout" out "$(cat "$dir/o")"
check "--mark: stderr is the marker, then the command's" "00 63 61 70 79 62 61 72 61 2d 65 78 65 63 00 65 72 72 0a" "$(od -An -tx1 -v "$dir/e" | tr -s ' \n' ' ' | sed 's/^ //; s/ $//')"
check "--mark: pid file removed" "gone" "$([ -e "$ctl.pid" ] && echo there || echo gone)"
touch "$ctl.kill"
"$helper" "$ctl" 'echo ran' 10 --session --mark >"$dir/o" 2>"$dir/e"
check "--mark: CTL.kill still refuses the start, after the marker" "137 [] 15" "$? [$(cat "$dir/o")] $(wc -c <"$dir/e" | tr -d ' ')"
rm -f "$ctl.kill" "$ctl.pid"
"$helper" "$ctl" 'echo ran' 10 --session --mark >"$dir/o" 2>&-
check "--mark: a stderr that takes no marker runs nothing" "125 []" "$? [$(cat "$dir/o")]"
"$helper" "$ctl" 'echo ran' 10 --mark >"$dir/o" 2>"$dir/e"
check "--mark without --session: 125, no marker, nothing run" "125 [] 0" "$? [$(cat "$dir/o")] $(head -c 1 "$dir/e" | od -An -tx1 | tr -d ' ' | grep -c 00)"
"$helper" "$ctl" 'echo ran' 10 --session --mark --mark >"$dir/o" 2>/dev/null
check "--mark twice: 125, nothing run" "125 []" "$? [$(cat "$dir/o")]"

"$helper" "$ctl" 'true' 2>/dev/null
check "two arguments: 125" 125 $?
"$helper" "$ctl" 'true' 5 --sessions 2>/dev/null
check "an unknown fourth argument: 125" 125 $?
"$helper" "$ctl" 'true' 5x 2>/dev/null
check "bad SECONDS: 125" 125 $?
"$helper" "$ctl" 'true' 99999999999999999999 2>/dev/null
check "SECONDS past 64 bits: 125" 125 $?
"$helper" "$ctl" 'exit 3' 18446744073709551615
check "SECONDS at 64 bits runs" 3 $?

[ $fails = 0 ] && echo "exec_helper: all passed" && exit 0
echo "exec_helper: $fails failed"
exit 1
