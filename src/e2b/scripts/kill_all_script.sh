# shellcheck shell=bash
# embed-first: kill_scan.sh
# KILL_ALL_SCRIPT (as the sandbox user; bash, run as `/bin/bash -c SCRIPT NAME`, embedded after
# kill_scan.sh's functions): docs/contract.md "Lifecycle" kill_all: kills every exec wrapper
# (any "capybara-exec /tmp/.capybara-exec-..." process, tagged or not) with its whole tree, and
# the sessions of wrappers that died before their commands (orphans). Commands not started
# through exec are left alone. Exits 0.
wrappers "capybara-exec /tmp/[.]capybara-exec-";
orphans "capybara-exec /tmp/[.]capybara-exec-";
kill_trees
