# shellcheck shell=sh
# LIST_SCRIPT PATH (as the sandbox user; ours, not the seed's): exit 3 when PATH does not
# exist, 4 when it is not a directory (symlinks followed), else one record
# "<type> <size> <name>\0" per entry of PATH, not recursive, where type is find's %y (f, d, l,
# p, s, c, b) and size is lstat's. NUL ends a record because a name may hold any other byte.
# find exits non-zero (stderr says why) when PATH cannot be read as the user.
if [ ! -e "$1" ]; then exit 3; fi;
if [ ! -d "$1" ]; then exit 4; fi;
exec find -H "$1" -mindepth 1 -maxdepth 1 -printf '%y %s %f\0'
