# shellcheck shell=sh
# EXEC_WRAPPER (ours since the exec helper; run as `setsid -w /bin/sh -c WRAPPER capybara-exec
# CTL CMD SECONDS`): records its pid (the session leader) in CTL.pid so a killer can find the
# session; exits 137 without running CMD when CTL.kill already exists (the kill raced ahead of
# the start); then, when the template has the exec helper SBX_E2B_EXEC_HELPER
# (templates/capybara-sandbox/capybara-exec.c), becomes it (`exec`: same pid, same session):
# it runs CMD with /bin/bash in a process group of its own under an in-sandbox SECONDS
# backstop that SIGKILLs that group even if the client vanished, removes CTL.pid and exits
# with CMD's status (128 + N for a death by signal N, 137 at the backstop), in one process
# where the rest of the script takes three. Without the helper (the seed's script, for any
# other template): the same with `timeout -s KILL SECONDS /bin/bash -c CMD`, `rm -f CTL.pid`.
# "capybara-exec CTL" in its argv (the helper's path ends in capybara-exec) is what
# kill_script.sh, kill_all_script.sh and kill_tagged_script.sh match.
# docs/internals/exec-cost.md says what each step costs.
c=$1;
echo $$ > "$c.pid" 2>/dev/null;
if [ -e "$c.kill" ]; then exit 137; fi;
if [ -x @SBX_E2B_EXEC_HELPER@ ]; then exec @SBX_E2B_EXEC_HELPER@ "$@"; fi;
timeout -s KILL "$3" /bin/bash -c "$2";
s=$?;
rm -f "$c.pid";
exit $s
