# shellcheck shell=sh
# MAKE_DIR_SCRIPT PATH (as the call's user; ours): makes PATH's parents, then PATH itself with
# one mkdir, so "made it" is exact: exit 0 made, 4 a directory (or a symlink to one) was there,
# 5 something else is in the way, 1 with mkdir's message otherwise.
export LC_ALL=C;
e=$(mkdir -p -- "$(dirname -- "$1")" 2>&1) && e=$(mkdir -- "$1" 2>&1) && exit 0;
[ -d "$1" ] && exit 4;
{ [ -e "$1" ] || [ -L "$1" ]; } && exit 5;
printf '%s\n' "$e" >&2;
exit 1
