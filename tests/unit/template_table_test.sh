#!/usr/bin/env bash
# tests/unit/template_table_test.sh ROOT: cmake/templates.cmake turns templates/NAME/Dockerfile
# into fake-e2b's template table (fake-e2b/runtime/template.c), following each Dockerfile, and
# refuses one it cannot read fully, naming the file and what is wrong (ctest unit.template_table).
set -uo pipefail
root=$(cd "$1" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
cp -r "$root/templates" "$tmp/templates"
cf=$tmp/templates/capybara-sandbox/Dockerfile
gen() { cmake -DDIR="$tmp/templates" -DOUT="$tmp/out.inc" -P "$root/cmake/templates.cmake" >"$tmp/err" 2>&1; }
# the entry NAME of the table, one line
entry() { tr -d '\n' <"$tmp/out.inc" | grep -o "\.id = \"$1\",[^}]*}" | tr -s ' '; }
dirs() { tr -d '\n' <"$tmp/out.inc" | grep -o "/\* $1 \*/[^;]*" | tr -s ' '; }
want() { # NAME GOT WANT
	if [ "$2" == "$3" ]; then echo "ok   - $1"; else printf 'FAIL - %s\n  got  %s\n  want %s\n' "$1" "$2" "$3"; fails=1; fi
}
# drift SED-EXPR [FILE]: edit a copy of a Dockerfile (which must change) and regenerate
drift() {
	local f=${2:-$cf}
	cp "$f" "$f.orig"
	sed -i "$1" "$f"
	cmp -s "$f" "$f.orig" && { echo "FAIL - '$1' does not change $f"; fails=1; }
	gen
	echo $? >"$tmp/rc"
	mv "$f.orig" "$f"
}
refused() { # NAME MESSAGE: the last drift failed the build with MESSAGE
	if [ "$(cat "$tmp/rc")" != 0 ] && tr -d '\n' <"$tmp/err" | tr -s ' ' | grep -qF -- "$2"; then
		echo "ok   - $1"
	else
		printf 'FAIL - %s: rc %s, wanted "%s" in:\n%s\n' "$1" "$(cat "$tmp/rc")" "$2" "$(cat "$tmp/err")"
		fails=1
	fi
}

gen || { echo "FAIL - the tree's templates are refused:"; cat "$tmp/err"; exit 1; }
want "base" "$(entry base)" '.id = "base", .user = "user", .uid = 1000, .gid = 1000, .home = "/home/user", .workdir = "/home/user", .sudo = true, .dirs = dirs_0, .n_dirs = 1, .exec_helper = false, }'
want "base's directories" "$(dirs base)" '/* base */ {"/home/user", 0755, true},}'
want "capybara-sandbox" "$(entry capybara-sandbox)" '.id = "capybara-sandbox", .user = "sandbox", .uid = 1000, .gid = 1000, .home = "/workspace", .workdir = "/workspace", .sudo = false, .dirs = dirs_1, .n_dirs = 3, .exec_helper = true, }'
want "capybara-sandbox's directories" "$(dirs capybara-sandbox)" '/* capybara-sandbox */ {"/workspace", 0755, true}, {"/skills", 0755, false}, {"/opt/capybara", 0700, false},}'

drift 's/chmod 0755 \/skills/chmod 0750 \/skills/'
want "a chmod in the Dockerfile is the directory's mode" "$(dirs capybara-sandbox)" '/* capybara-sandbox */ {"/workspace", 0755, true}, {"/skills", 0750, false}, {"/opt/capybara", 0700, false},}'
drift 's/chown root:root \/skills \/opt\/capybara/chown sandbox:sandbox \/skills/'
want "chown to the user: owned by the user" "$(dirs capybara-sandbox)" '/* capybara-sandbox */ {"/workspace", 0755, true}, {"/skills", 0755, true}, {"/opt/capybara", 0700, false},}'
drift 's/useradd --uid 1000 --gid 1000/useradd --uid 1001 --gid 1002/'
want "useradd's ids" "$(entry capybara-sandbox | grep -o '.uid = [0-9]*, .gid = [0-9]*')" '.uid = 1001, .gid = 1002'
drift 's/^WORKDIR \/workspace/WORKDIR \/skills/'
want "WORKDIR" "$(entry capybara-sandbox | grep -o '.workdir = "[^"]*"')" '.workdir = "/skills"'
mkdir "$tmp/templates/mine" && cp "$cf" "$tmp/templates/mine/Dockerfile"
gen
want "a new templates/NAME/Dockerfile is a new entry" "$(grep -o '.id = "[^"]*"' "$tmp/out.inc" | tr '\n' ' ')" '.id = "base" .id = "capybara-sandbox" .id = "mine" '
rm -r "$tmp/templates/mine"

drift 's/^ENV HOME=\/workspace/ENV HOME=\/home\/sandbox/'
refused "ENV HOME differs from useradd's" "capybara-sandbox/Dockerfile: ENV HOME=/home/sandbox but useradd --home-dir /workspace"
drift 's/chmod 0755 \/opt\/capybara-exec/chmod 0700 \/opt\/capybara-exec/'
refused "the exec helper not 0755" "/opt/capybara-exec is mode 0700; fake-e2b writes it 0755"
drift '/^WORKDIR/d'
refused "no WORKDIR" "capybara-sandbox/Dockerfile: no WORKDIR"
drift 's/ --home-dir \/workspace//'
refused "useradd without --home-dir" "capybara-sandbox/Dockerfile: no home (useradd --uid U --gid G --home-dir H ... NAME)"
drift 's/chmod 0700 \/opt\/capybara/chmod 0700 \/opt\/other/'
refused "a mode for a directory nobody makes" "chmod /opt/other: not a directory made by mkdir -p or useradd --create-home"
drift 's/chmod 0755 \/skills/chmod u+x \/skills/'
refused "a mode that is not octal" "chmod u+x /skills: the mode must be four octal digits"
drift 's/^USER sandbox/USER root/'
refused "USER differs from useradd's" "USER root but useradd makes sandbox"

[ $fails -eq 0 ] && echo "template table: follows the Dockerfiles, refuses 7 it cannot read"
exit $fails
