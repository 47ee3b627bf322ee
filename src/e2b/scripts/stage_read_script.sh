# shellcheck shell=sh
# STAGE_READ_SCRIPT PATH STAGING N READ_SCRIPT (as root; ours): copies the first N bytes of
# PATH into the root-only staging file STAGING, PATH read by READ_SCRIPT (read_script.sh) as
# the sandbox user (runuser), so permissions and symlinks resolve as that user exactly as for
# a direct read; only the staging file, which the user cannot reach, is opened by root. Exit
# statuses are READ_SCRIPT's (3 missing, 4 a directory); on any failure the staging file is
# removed. envd's GET /files then sends STAGING raw.
umask 077;
mkdir -p -- @SBX_E2B_UPLOAD_DIR@ || exit 1;
runuser -u @SBX_E2B_SANDBOX_USER@ -- /bin/sh -c "$4" capybara-read "$1" "$3" > "$2";
s=$?;
if [ $s -ne 0 ]; then rm -f -- "$2"; fi;
exit $s
