#!/usr/bin/env bash
# lint.sh: the source checks of style brief §2.9, §2.21 and §2.25.
#
#   1. banned calls in src/, cli/, fake-e2b/: sprintf, vsprintf, strcpy, strcat,
#      strtok, atoi, atol, gets, strerror (use strerror_r), system, signal (use
#      sigaction). Comments and string literals are ignored (the in-sandbox
#      scripts are strings).
#   2. raw malloc/calloc/realloc/free/strdup/strndup in src/ outside
#      src/util/alloc.c (all allocation goes through sbx__malloc and friends).
#   3. clang-format --dry-run --Werror over every C file git knows (tracked or
#      untracked and not ignored), with the repository's .clang-format.
#   4. prints the 10 longest functions of src/, cli/ and fake-e2b/ (information
#      only, never fails; universal-ctags, no extra package).
#
# Needs clang-format (Debian 12: clang-format 14, the version .clang-format is
# written for) and, for step 4 only, universal-ctags:
#   apt-get install -y clang-format universal-ctags
# Usage: bash scripts/lint.sh        (from anywhere; exit 1 on any finding)
#   LINT_TOP=N   how many longest functions to print (default 10)
# A finding is printed as file:line: what, so editors can jump to it.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
status=0

# Every C file of the tree git would commit (tracked, or new and not ignored).
mapfile -t all_c < <(git ls-files -co --exclude-standard -- '*.c' '*.h' | sort -u)
in_dirs() { # in_dirs DIR...: the C files under those directories
	local f d
	for f in "${all_c[@]}"; do
		for d in "$@"; do
			case "$f" in "$d"/*) [ -f "$f" ] && printf '%s\n' "$f" ;; esac
		done
	done
}

# find_calls REGEX MESSAGE FILE...: report each line of code that calls a name
# matching REGEX. Comments and string/char literals are blanked first (line
# numbers kept), so a banned name inside a script string or a comment is not a
# finding. One perl process for all files. Exit 1 when anything was found.
find_calls() {
	local re=$1 msg=$2
	shift 2
	[ $# -gt 0 ] || return 0
	RE=$re MSG=$msg perl -e '
		my ($re, $msg, $hits) = (qr/$ENV{RE}/, $ENV{MSG}, 0);
		for my $f (@ARGV) {
			open(my $fh, "<", $f) or next;
			local $/;
			my $src = <$fh>;
			$src =~ s{(/\*.*?\*/)|(//[^\n]*)|("(?:\\.|[^"\\\n])*")|(\x27(?:\\.|[^\x27\\\n])*\x27)}{
				my $m = $&; $m =~ s/[^\n]/ /g; $m }gse;
			my $n = 0;
			for my $line (split /\n/, $src, -1) {
				$n++;
				while ($line =~ /$re/g) { print "$f:$n: $2(): $msg\n"; $hits = 1; }
			}
		}
		exit $hits;' "$@"
}

echo "== banned calls (src/ cli/ fake-e2b/)"
mapfile -t code < <(in_dirs src cli fake-e2b)
banned='(^|[^A-Za-z0-9_.>])(sprintf|vsprintf|strcpy|strcat|strtok|atoi|atol|gets|strerror|system|signal)\s*\('
find_calls "$banned" "banned (use snprintf, strtoll, strerror_r, sigaction; style §2.25)" \
	"${code[@]}" || status=1

echo "== raw allocation in src/ (outside src/util/alloc.c)"
mapfile -t lib < <(in_dirs src | grep -vx 'src/util/alloc.c')
raw='(^|[^A-Za-z0-9_.>])(malloc|calloc|realloc|free|strdup|strndup)\s*\('
find_calls "$raw" "raw allocator: use sbx__malloc/calloc/realloc/free/strdup (style §2.9)" \
	"${lib[@]}" || status=1

echo "== clang-format"
if command -v clang-format >/dev/null; then
	fmt_bad=0
	existing=()
	for f in "${all_c[@]}"; do [ -f "$f" ] && existing+=("$f"); done
	# One clang-format process; each warning line starts with "file:line:col:".
	while read -r n f; do
		echo "$f: not clang-formatted ($n places): run clang-format -i $f"
		fmt_bad=1
	done < <(clang-format --style=file --dry-run "${existing[@]}" 2>&1 |
		sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: warning:.*/\1/p' | uniq -c)
	[ $fmt_bad -eq 0 ] || status=1
else
	echo "lint: clang-format not installed (apt-get install clang-format)" >&2
	status=1
fi

echo "== ${LINT_TOP:-10} longest functions in src/ cli/ fake-e2b/ (lines; information, style §2.21)"
if command -v ctags >/dev/null; then
	ctags -x --c-kinds=f --fields=+ne --_xformat='%N %F %n %{end}' "${code[@]}" 2>/dev/null |
		awk 'NF == 4 && $4 > $3 { printf "%5d  %s:%d  %s\n", $4 - $3 + 1, $2, $3, $1 }' |
		sort -rn | head -n "${LINT_TOP:-10}"
else
	echo "(ctags not installed: skipped)"
fi

if [ $status -eq 0 ]; then
	echo "lint: clean"
else
	echo "lint: FAILED (see the file:line findings above)" >&2
fi
exit $status
