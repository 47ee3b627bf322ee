# shellcheck shell=sh
# KILL_SCRIPT CTL (the seed's, docs/contract.md "exec" timeout or abort; as the sandbox user):
# creates CTL.kill first so a wrapper that has not started yet never runs its command (a
# symlink to /: `ln -s` never follows nor opens what another user of the box put at that name
# in the shared /tmp, where the seed's `: > CTL.kill`, run as root for a root command,
# truncated the file a `sandbox` user's symlink named, or waited for ever on its FIFO); waits up
# to 1 s (20 x 50 ms) for CTL.pid, kills that session's tree; then kills every wrapper still
# matching "capybara-exec CTL" and its tree; removes CTL.pid. Always exits 0: success means the
# kill ran, not that there was something to kill.
#
# k PID: SIGKILLs the process groups of PID's children, PID's own process group, and every
# process in PID's session, so a command that started its own groups or daemons under the exec
# session still dies. The session is killed group by group, as kill_scan.sh's kill_by 4 g: for
# each process whose /proc/PID/stat names the session, its process group, then the process
# (builtins only: read, set, kill). The seed's pkill -s killed them one at a time, which a fork
# bomb at the cap outruns (each kill frees a slot that a process not yet killed refills with a
# child pkill's list does not hold); a kill(2) of a group and a fork(2) in it are atomic to each
# other. Errors are silenced: the targets may be gone.
# shellcheck disable=SC2086 # a /proc/PID/stat line split into its fields on purpose
k() {
	for t in $(pgrep -P "$1"); do kill -9 -"$t" 2>/dev/null; done;
	kill -9 -"$1" 2>/dev/null;
	s=$1;
	for d in /proc/[0-9]*; do
		read -r x 2>/dev/null < "$d/stat" || continue;
		set -- ${x##*) };
		[ "$4" = "$s" ] && kill -9 -"$3" "${d#/proc/}" 2>/dev/null;
	done;
};
c=$1;
ln -s / "$c.kill" 2>/dev/null;
i=0;
while [ ! -s "$c.pid" ] && [ $i -lt 20 ]; do sleep 0.05; i=$((i+1)); done;
p=$(cat "$c.pid" 2>/dev/null);
if [ -n "$p" ]; then k "$p"; rm -f "$c.kill"; fi;
for q in $(pgrep -f -- "capybara-exec $c"); do k "$q"; kill -9 "$q" 2>/dev/null; done;
rm -f "$c.pid";
exit 0
