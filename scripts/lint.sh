#!/usr/bin/env bash
# lint.sh: the source checks CI runs before it builds (CONTRIBUTING.md "Lint"; the layers and
# the header rule are docs/internals/architecture.md "Seams the lint enforces").
#
#   1. banned calls in src/, cli/, fake-e2b/: sprintf, vsprintf, strcpy, strcat,
#      strtok, atoi, atol, gets, strerror (use strerror_r), system, signal (use
#      sigaction). Comments and string literals are ignored (the in-sandbox
#      scripts are strings).
#   2. raw malloc/calloc/realloc/free/strdup/strndup in src/ outside
#      src/util/alloc.c (all allocation goes through sbx__malloc and friends).
#   3. clang-format --dry-run --Werror over every C file git knows (tracked or
#      untracked and not ignored), with the repository's .clang-format.
#   4. header self-containment: every header under include/, src/, cli/ and
#      fake-e2b/ compiles alone, included twice (so its guard works); the public
#      ones under plain -std=c11 -pedantic, as a user's compiler sees them.
#   5. the floors of src/: a file includes only headers of its own floor or a
#      lower one (the table is scripts/src-floors.sh).
#   6. shellcheck (severity warning and up) over every shell script git knows; every
#      severity over the in-sandbox scripts (src/e2b/scripts/).
#   7. functions over 80 lines in src/, cli/ and fake-e2b/: each must be listed in
#      scripts/long-functions.txt, and every entry there must still be long (so
#      the list only shrinks); the 10 longest are printed (universal-ctags).
#   8. no circle of calls among the files of one folder of src/, cli/ and fake-e2b/
#      (scripts/check-circles.sh; the circles that stood when the rule came in are
#      scripts/circles.txt, a list that only shrinks).
#   9. the facts written in more than one place agree (scripts/check-facts.sh): the
#      E2B_* variables of the config keys (cli/config.c, README.md), the error codes' names
#      (the enum, the library, serve, bindings/protocol/methods.md); no constant #defined in
#      two files.
#  10. what the docs name exists (scripts/check-docs.sh): the paths and links, the identifiers
#      and test cases they cite (the ctest names, commands and options need a build: ctest
#      unit.check_docs checks those).
#  11. no comment or doc cites a note that does not ship: an issue number, the team's E2B
#      protocol notes, a brief (scripts/check-citations.sh; cite the docs/ section instead).
#
# Needs clang-format (Debian 12: clang-format 14, the version .clang-format is
# written for), gcc, the -dev packages of scripts/install-deps.sh, shellcheck and
# universal-ctags:
#   apt-get install -y clang-format universal-ctags shellcheck
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
find_calls "$banned" "banned (use snprintf, strtoll, strerror_r, sigaction: CONTRIBUTING.md, Lint)" \
	"${code[@]}" || status=1

echo "== raw allocation in src/ (outside src/util/alloc.c)"
mapfile -t lib < <(in_dirs src | grep -vx 'src/util/alloc.c')
raw='(^|[^A-Za-z0-9_.>])(malloc|calloc|realloc|free|strdup|strndup)\s*\('
find_calls "$raw" "raw allocator: use sbx__malloc/calloc/realloc/free/strdup (src/util/alloc.h)" \
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

echo "== headers compile alone (include/ src/ cli/ fake-e2b/)"
# Each header is compiled as a translation unit of its own, included twice. Feature macros
# (_GNU_SOURCE) belong to the .c file, before its first system header, so a header cannot set
# them: the private headers are checked as the .c files compile them, with _GNU_SOURCE; the
# public ones without it, as C11 with -pedantic, as a program using the library compiles them.
# Include paths are the union of the build's: include/, src/, cli/, fake-e2b/ and each
# fake-e2b/ folder that holds headers (every library there exports its folder).
mapfile -t headers < <(printf '%s\n' "${all_c[@]}" | grep -E '^(include|src|cli|fake-e2b)/.*\.h$')
existing_h=()
for h in "${headers[@]}"; do [ -f "$h" ] && existing_h+=("$h"); done
if command -v gcc >/dev/null; then
	inc=(-Iinclude -Isrc -Icli -Ifake-e2b)
	while read -r d; do inc+=("-I$d"); done < <(printf '%s\n' "${existing_h[@]}" |
		grep '^fake-e2b/' | xargs -r -n1 dirname | sort -u)
	# pkg-config's -I for the -dev packages the headers include (jansson, curl, microhttpd).
	read -r -a pc <<<"$(pkg-config --cflags jansson libcurl libmicrohttpd 2>/dev/null)"
	check_header() { # check_header FILE: print FILE's compiler errors, exit 1 if any
		local h=$1 std=(-std=gnu11 -D_GNU_SOURCE) out
		case "$h" in include/*) std=(-std=c11 -pedantic) ;; esac
		out=$(printf '#include "%s"\n#include "%s"\n' "$root/$h" "$root/$h" |
			gcc "${std[@]}" -fsyntax-only -Wall -Wextra -Werror "${inc[@]}" "${pc[@]}" \
				-x c - 2>&1) && return 0
		printf '%s:1: does not compile alone:\n%s\n' "$h" "$(printf '%s\n' "$out" | head -n 5)"
		return 1
	}
	export -f check_header
	export root
	export INC="${inc[*]} ${pc[*]}"
	# Two at a time (xargs -P2): about 2 s for the whole tree.
	printf '%s\0' "${existing_h[@]}" |
		xargs -0 -r -P2 -n1 bash -c 'read -r -a inc <<<"$INC"; check_header "$1"' _ || status=1
else
	echo "lint: gcc not installed" >&2
	status=1
fi

echo "== src/ floors: no include reaches a higher floor"
# The floor table is scripts/src-floors.sh (check-layers.sh checks the built objects with it).
# shellcheck source=scripts/src-floors.sh
. "$root/scripts/src-floors.sh"
floor_bad=0
while IFS=: read -r f n inc; do
	from=$(src_floor "$f") to=$(src_floor "$inc")
	if [ "$to" -gt "$from" ]; then
		echo "$f:$n: includes \"$inc\" (floor $to) from floor $from: an upward include;" \
			"move the code down, or hand it in as a callback (or list the file lower in scripts/src-floors.sh)"
		floor_bad=1
	fi
done < <(mapfile -t srcs < <(in_dirs src) && [ ${#srcs[@]} -gt 0 ] &&
	grep -Hn -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "${srcs[@]}" |
	sed 's/^\([^:]*:[0-9]*\):[^"]*"\([^"]*\)".*/\1:\2/')
[ $floor_bad -eq 0 ] || status=1

echo "== shellcheck (warnings and errors)"
if command -v shellcheck >/dev/null; then
	mapfile -t shells < <(git ls-files -co --exclude-standard -- '*.sh' .ci/run | sort -u)
	existing_sh=()
	for f in "${shells[@]}"; do [ -f "$f" ] && existing_sh+=("$f"); done
	shellcheck -x -S warning -f gcc "${existing_sh[@]}" || status=1
	# The in-sandbox scripts at every severity (notes and style too): they are the
	# contract's behaviour inside a sandbox (src/e2b/scripts.h). The rules they
	# disable are disabled inline, each with its reason.
	mapfile -t boxed < <(git ls-files -co --exclude-standard -- 'src/e2b/scripts/*.sh' | sort -u)
	[ ${#boxed[@]} -eq 0 ] || shellcheck -S style -f gcc "${boxed[@]}" || status=1
else
	echo "lint: shellcheck not installed (apt-get install shellcheck)" >&2
	status=1
fi

echo "== functions over 80 lines (src/ cli/ fake-e2b/; exemptions: scripts/long-functions.txt)"
long_list=scripts/long-functions.txt
if command -v ctags >/dev/null; then
	# "file function lines" for every function longer than 80 lines, today.
	mapfile -t lens < <(ctags -x --c-kinds=f --fields=+ne --_xformat='%N %F %n %{end}' \
		"${code[@]}" 2>/dev/null | awk 'NF == 4 && $4 > $3 { print $2, $1, $3, $4 - $3 + 1 }')
	long_bad=0
	declare -A listed=()
	while read -r f fn n _; do
		case "$f" in '' | '#'*) continue ;; esac
		listed["$f $fn"]=$n
	done <"$long_list"
	declare -A seen=()
	for l in "${lens[@]}"; do
		read -r f fn line n <<<"$l"
		[ "$n" -gt 80 ] || continue
		seen["$f $fn"]=1
		if [ -z "${listed["$f $fn"]:-}" ]; then
			echo "$f:$line: $fn() is $n lines (over 80): split it by what it does; if it must" \
				"stay whole, write the reason above it and add \"$f $fn $n\" to $long_list"
			long_bad=1
		elif [ "$n" -gt "${listed["$f $fn"]}" ]; then
			echo "$f:$line: note: $fn() grew from ${listed["$f $fn"]} to $n lines (exempt, but splitting it is due)"
		fi
	done
	for k in "${!listed[@]}"; do
		[ -n "${seen[$k]:-}" ] && continue
		echo "$long_list: \"$k\" is no longer over 80 lines (or is gone): delete its line"
		long_bad=1
	done
	[ $long_bad -eq 0 ] || status=1
	echo "-- the ${LINT_TOP:-10} longest (lines)"
	printf '%s\n' "${lens[@]}" | awk '{ printf "%5d  %s:%d  %s\n", $4, $1, $3, $2 }' |
		sort -rn | head -n "${LINT_TOP:-10}"
else
	echo "lint: ctags not installed (apt-get install universal-ctags)" >&2
	status=1
fi

echo "== no circle of calls within a folder (src/ cli/ fake-e2b/; exemptions: scripts/circles.txt)"
CIRCLES_ALLOWED=scripts/circles.txt bash scripts/check-circles.sh "${code[@]}" || status=1

echo "== facts written in more than one place agree (scripts/check-facts.sh)"
bash scripts/check-facts.sh "$root" || status=1

echo "== what the docs name exists (scripts/check-docs.sh; with the build: ctest unit.check_docs)"
bash scripts/check-docs.sh "$root" || status=1
echo "== citations only of what ships (scripts/check-citations.sh)"
bash scripts/check-citations.sh "$root" || status=1

if [ $status -eq 0 ]; then
	echo "lint: clean"
else
	echo "lint: FAILED (see the file:line findings above)" >&2
fi
exit $status
