#!/usr/bin/env bash
# unit.embed: cmake/embed.cmake MODE=shell makes a readable script the one line the sandbox
# runs (the good script, byte for byte), and refuses a line where a newline and a space mean
# different things to the shell.  embed_test.sh SOURCE_DIR SCRATCH_DIR
set -euo pipefail
src=$1 out=$2
data=$src/tests/unit/data/embed
mkdir -p "$out"
cmake -DMODE=shell -DSRC_DIR="$data" -DFILES=good -DOUT="$out/good.c" -DINCLUDE=none.h \
	-DPREFIX=t_ -P "$src/cmake/embed.cmake"
cat >"$out/main.c" <<'C'
#include <stdio.h>
#define EMBED_TEST_WORD "word"
#define main unused_main
C
sed 1,2d "$out/good.c" >>"$out/main.c"
printf '#undef main\nint main(void) { fputs(t_good, stdout); return 0; }\n' >>"$out/main.c"
cc -std=c11 -Wall -Werror -o "$out/good" "$out/main.c"
want='f() { :; }; if [ -n "$1" ]; then echo "?? \ $1" word; fi'
got=$("$out/good")
if [ "$got" != "$want" ]; then
	printf 'embed: got  %s\nembed: want %s\n' "$got" "$want" >&2
	exit 1
fi
if msg=$(cmake -DMODE=shell -DSRC_DIR="$data" -DFILES=bad -DOUT="$out/bad.c" -DINCLUDE=none.h \
	-DPREFIX=t_ -P "$src/cmake/embed.cmake" 2>&1); then
	echo "embed: bad.sh was embedded; it must be refused" >&2
	exit 1
fi
# cmake wraps its message at the terminal's width, which a long source path moves: one line
flat=$(printf '%s' "$msg" | tr '\n' ' ' | tr -s ' ')
case $flat in
*'bad.sh: the line "echo a" ends'*) ;;
*) printf 'embed: refused bad.sh, but said:\n%s\n' "$msg" >&2; exit 1 ;;
esac
echo "embed: 2 passed, 0 failed"
