# shellcheck shell=sh
# FILEOP_WRAPPER (ours; run as `setsid -w /bin/sh -c WRAPPER capybara-exec CTL SECONDS
# /bin/sh -c SCRIPT NAME ARGS...`, as the file operation's user): exec_wrapper.sh for a file
# operation's script, so the exec kill path (kill_script.sh CTL) stops it: records the session
# leader's pid in CTL.pid, exits 137 without running anything when CTL.kill exists, runs the
# script with its arguments untouched under `timeout -s KILL SECONDS`, removes CTL.pid and
# exits with the script's status. CTL is /tmp/.capybara-fileop-<uuid>, which
# kill_all_script.sh does not match: a killAll stops commands, not a concurrent file operation.
c=$1;
t=$2;
shift 2;
echo $$ > "$c.pid" 2>/dev/null;
if [ -e "$c.kill" ]; then exit 137; fi;
timeout -s KILL "$t" "$@";
s=$?;
rm -f "$c.pid";
exit $s
