# shellcheck shell=bash
# embed-first: kill_scan.sh
# KILL_TAGGED_SCRIPT TAG... (as the sandbox user; bash, run as `/bin/bash -c SCRIPT NAME
# TAG...`, embedded after kill_scan.sh's functions): docs/contract.md "Lifecycle" kill_tagged:
# for each tag, kills the wrappers whose control path is exactly /tmp/.capybara-exec-TAG-<uuid>
# (the UUID pattern and the "( |$)" end keep tag "a" from matching tag "a-b"), with their trees.
# Tags are validated before (letters, digits, _ and -), so they are safe inside the pattern.
# Exits 0.
u='[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
r=();
for t; do r+=("capybara-exec /tmp/[.]capybara-exec-$t-$u( |$)"); done;
wrappers "${r[@]}";
orphans "${r[@]}";
kill_trees
