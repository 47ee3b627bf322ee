# shellcheck shell=sh
# REMOVE_SCRIPT PATH (as root; ours): removes a staging file; a missing one is fine.
rm -f -- "$1"
