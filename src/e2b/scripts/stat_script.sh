# shellcheck shell=sh
# STAT_SCRIPT PATH (the seed's, docs/contract.md "Files" stat; as the sandbox user): exit 3 when
# PATH does not exist, else prints "<size> directory" or "<size> file" (size through stat -L,
# falling back to wc -c), which the provider parses with ^(\d+) (file|directory)\n?$.
if [ ! -e "$1" ]; then exit 3; fi;
s=$(stat -L -c %s -- "$1" 2>/dev/null) || s=$(($(wc -c < "$1")));
if [ -d "$1" ]; then echo "$s directory"; else echo "$s file"; fi
