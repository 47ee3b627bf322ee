# shellcheck shell=sh
# WRITE_MANY_SCRIPT WHO PATH STAGING [PATH STAGING]... (as root; ours): each PATH in order from
# its root-only STAGING file as user_write_script.sh writes one (as the sandbox user, parents
# made, no symlink escape), or as skills_write_script.sh for /skills and below, or as root
# when WHO is "root". Every staging file is removed, written or not. At the first failure the
# rest are not written: its PATH goes to stdout, the tool's message to stderr, and the exit is
# 1; 0 when all were written.
w=$1;
shift;
s=0;
# shellcheck disable=SC2016 # the inner script's $1 is the inner shell's, single-quoted on purpose
while [ $# -ge 2 ]; do
	p=$1;
	g=$2;
	shift 2;
	if [ $s = 0 ]; then
		case $w:$p in root:*) ( mkdir -p -- "$(dirname -- "$p")" && cat -- "$g" > "$p" ) || s=1 ;;
		*:/skills|*:/skills/*) ( umask 022; mkdir -p -- "$(dirname -- "$p")" && cat -- "$g" > "$p" && chmod 0644 "$p" ) || s=1 ;;
		*) runuser -u @SBX_E2B_SANDBOX_USER@ -- /bin/sh -c 'set -e; mkdir -p -- "$(dirname -- "$1")"; cat > "$1"' capybara-write "$p" < "$g" || s=1 ;;
		esac;
		[ $s = 1 ] && printf '%s' "$p";
	fi;
	rm -f -- "$g";
done;
exit $s
