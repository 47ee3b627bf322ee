# shellcheck shell=sh
# PATH_INFO_SCRIPT PATH (as the call's user; ours): the entry record of PATH (not followed) on
# stdout; exit 3 when PATH (or a parent) does not exist, 1 with find's message on stderr for
# any other failure (permission).
# The entry record (rename_script.sh prints the same): find -printf's record of one path as
# lstat sees it, seven NUL-ended fields: type (%y: f d l p s c b), size, permission bits in
# octal, owner, group (names, or the ids without one), mtime as "<s>.<fraction>" and the
# symlink's target as stored (empty for others).
# The failure case (rename_script.sh has the same): after a failed step whose stderr is in
# $e, exit 3 when it was "No such file or directory" (LC_ALL=C), else put $e on stderr, exit 1.
export LC_ALL=C;
{ e=$(find "$1" -maxdepth 0 -printf '%y\0%s\0%m\0%u\0%g\0%T@\0%l\0' 2>&1 >&3); s=$?; } 3>&1;
[ $s -eq 0 ] && exit 0;
case $e in *'No such file or directory') exit 3;; esac;
printf '%s\n' "$e" >&2;
exit 1
