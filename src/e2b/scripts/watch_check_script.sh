# shellcheck shell=sh
# WATCH_CHECK_SCRIPT DIR (as the watch's user; ours): exit 3 when DIR does not exist, 4 when it
# is no directory, 5 when the user may not list it (read and search); 0 otherwise. envd
# watches as root, so this is what keeps a watch to what the user could see through a shell.
[ -e "$1" ] || exit 3;
[ -d "$1" ] || exit 4;
{ [ -r "$1" ] && [ -x "$1" ]; } || exit 5;
exit 0
