# shellcheck shell=sh
# SEED_WRAPPER (the seed's exec wrapper, byte for byte: docs/exec.md "How a command runs"; run
# as `setsid -w /bin/sh -c SEED_WRAPPER capybara-exec CTL CMD SECONDS` by exec_wrapper.sh where
# the template has no exec helper): records its pid (the session leader) in CTL.pid so a killer
# can find the session; exits 137 without running CMD when CTL.kill already exists (the kill
# raced ahead of the start); runs CMD with /bin/bash under `timeout -s KILL SECONDS` (the
# in-sandbox backstop), removes CTL.pid and exits with CMD's status.
c=$1;
echo $$ > "$c.pid" 2>/dev/null;
if [ -e "$c.kill" ]; then exit 137; fi;
timeout -s KILL "$3" /bin/bash -c "$2";
s=$?;
rm -f "$c.pid";
exit $s
