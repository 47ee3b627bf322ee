# shellcheck shell=sh
# READ_SIZED_SCRIPT PATH N LIMIT (as the sandbox user; ours): read_script.sh, except that a
# regular file larger than LIMIT bytes is not read: exit 5, and the provider moves it raw
# through a staging file (stage_read_script.sh).
if [ ! -e "$1" ]; then exit 3; fi;
if [ -d "$1" ]; then exit 4; fi;
if [ -f "$1" ] && [ "$(stat -L -c %s -- "$1" 2>/dev/null || echo 0)" -gt "$3" ]; then exit 5; fi;
exec head -c "$2" -- "$1"
