# shellcheck shell=sh
# REMOVE_PATH_SCRIPT PATH (as the call's user; ours): rm -rf; a missing PATH is success.
export LC_ALL=C;
exec rm -rf -- "$1"
