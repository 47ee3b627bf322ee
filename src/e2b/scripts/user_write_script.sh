# shellcheck shell=sh
# USER_WRITE_SCRIPT PATH STAGING (the seed's, docs/contract.md "Files" write_file; as root):
# root opens the root-only staging file STAGING and feeds it on stdin to a shell running as the
# sandbox user, which creates PATH's parents and writes PATH: the write happens with the sandbox
# user's permissions, so a symlink cannot make root write outside what the user may write. The
# staging file is always removed; exit 0 only when the write succeeded.
s=1;
# shellcheck disable=SC2016 # the inner script's $1 is the inner shell's, single-quoted on purpose
runuser -u @SBX_E2B_SANDBOX_USER@ -- /bin/sh -c 'set -e; mkdir -p -- "$(dirname -- "$1")"; cat > "$1"' capybara-write "$1" < "$2" && s=0;
rm -f -- "$2";
exit $s
