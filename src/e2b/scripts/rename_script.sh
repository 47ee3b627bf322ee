# shellcheck shell=sh
# RENAME_SCRIPT FROM TO (as the call's user; ours): exit 3 when FROM does not exist; else makes
# TO's parents, `mv -T` (rename(2)'s meaning: TO is replaced, never entered) and prints the
# entry record of TO (path_info_script.sh says its fields); exit 1 with the failing tool's
# message otherwise (the failure case as in path_info_script.sh).
export LC_ALL=C;
e=$(find "$1" -maxdepth 0 -printf '' 2>&1) || {
	case $e in *'No such file or directory') exit 3;; esac;
	printf '%s\n' "$e" >&2;
	exit 1;
};
if ! e=$(mkdir -p -- "$(dirname -- "$2")" 2>&1) || ! e=$(mv -T -- "$1" "$2" 2>&1); then
	printf '%s\n' "$e" >&2;
	exit 1;
fi;
exec find "$2" -maxdepth 0 -printf '%y\0%s\0%m\0%u\0%g\0%T@\0%l\0'
