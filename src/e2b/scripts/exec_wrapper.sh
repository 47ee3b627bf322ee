# shellcheck shell=sh
# EXEC_WRAPPER (ours; run as `/bin/sh -c WRAPPER capybara-exec CTL CMD SECONDS SEED_WRAPPER`,
# docs/exec.md "How a command runs"). When the template has the exec helper SBX_E2B_EXEC_HELPER
# (templates/capybara-sandbox/capybara-exec.c), becomes it (`exec`: the same pid) with
# --session: it makes the session, records its pid (the session leader) in CTL.pid, exits 137
# without running CMD when CTL.kill already exists (the kill raced ahead of the start), runs CMD
# with /bin/bash in a process group of its own under an in-sandbox SECONDS backstop that
# SIGKILLs that group even if the client vanished, removes CTL.pid and exits with CMD's status
# (128 + N for a death by signal N, 137 at the backstop): two processes (this shell, then the
# helper and its bash) where the seed's line takes five. Without the helper (any other
# template): the seed's line, `setsid -w /bin/sh -c SEED_WRAPPER capybara-exec CTL CMD
# SECONDS` (exec_seed_wrapper.sh). "capybara-exec CTL" in the argv (the helper's path ends in
# capybara-exec) is what kill_script.sh, kill_all_script.sh and kill_tagged_script.sh match.
# docs/internals/exec-cost.md says what each step costs.
if [ -x @SBX_E2B_EXEC_HELPER@ ]; then exec @SBX_E2B_EXEC_HELPER@ "$1" "$2" "$3" --session; fi;
exec setsid -w /bin/sh -c "$4" capybara-exec "$1" "$2" "$3"
