# shellcheck shell=sh
# TEMPLATE_CHECK_SCRIPT (as root; ours): one line per convention of templates/capybara-sandbox
# the sandbox lacks (the user sandbox with uid 1000, /workspace, /skills root 0755,
# /opt/capybara root 0700, setsid, runuser, timeout, pgrep, pkill); nothing when it has them
# all. Exits 0.
c() { printf '%s\n' "$1"; };
[ "$(id -u sandbox 2>/dev/null)" = 1000 ] || c 'user sandbox with uid 1000';
[ -d /workspace ] || c /workspace;
[ "$(stat -c '%U %a' /skills 2>/dev/null)" = 'root 755' ] || c '/skills (root, 0755)';
[ "$(stat -c '%U %a' /opt/capybara 2>/dev/null)" = 'root 700' ] || c '/opt/capybara (root, 0700)';
for t in setsid runuser timeout pgrep pkill; do command -v "$t" >/dev/null 2>&1 || c "$t"; done;
exit 0
