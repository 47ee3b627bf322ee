# shellcheck shell=sh
# KILL_SCRIPT CTL (the seed's, docs/contract.md "exec" timeout or abort; as the sandbox user):
# creates CTL.kill first so a wrapper that has not started yet never runs its command; waits up
# to 1 s (20 x 50 ms) for CTL.pid, kills that session's tree; then kills every wrapper still
# matching "capybara-exec CTL" and its tree; removes CTL.pid. Always exits 0: success means the
# kill ran, not that there was something to kill.
#
# k PID: SIGKILLs the process groups of PID's children, PID's own process group, and every
# process in PID's session (pkill -s), so a command that started its own groups or daemons
# under the exec session still dies. Errors are silenced: the targets may be gone.
k() {
	for t in $(pgrep -P "$1"); do kill -9 -"$t" 2>/dev/null; done;
	kill -9 -"$1" 2>/dev/null;
	pkill -9 -s "$1" 2>/dev/null;
};
c=$1;
: > "$c.kill" 2>/dev/null;
i=0;
while [ ! -s "$c.pid" ] && [ $i -lt 20 ]; do sleep 0.05; i=$((i+1)); done;
p=$(cat "$c.pid" 2>/dev/null);
if [ -n "$p" ]; then k "$p"; rm -f "$c.kill"; fi;
for q in $(pgrep -f -- "capybara-exec $c"); do k "$q"; kill -9 "$q" 2>/dev/null; done;
rm -f "$c.pid";
exit 0
