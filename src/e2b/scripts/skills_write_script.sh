# shellcheck shell=sh
# SKILLS_WRITE_SCRIPT PATH STAGING (the seed's, docs/contract.md "Files" /skills; as root, for
# /skills and below): writes PATH as root with mode 0644 (umask 022 for new parents), so skills
# are readable but not writable by the sandbox user. Removes the staging file; exit 0 only when
# every step succeeded.
umask 022;
s=1;
mkdir -p -- "$(dirname -- "$1")" && cat -- "$2" > "$1" && chmod 0644 "$1" && s=0;
rm -f -- "$2";
exit $s
