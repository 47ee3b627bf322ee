#!/usr/bin/env bash
# check-layers.sh OBJECT...: fail when a built object of src/ uses a symbol that an object of a
# higher floor defines (the floors: scripts/src-floors.sh; docs/internals/architecture.md "The
# library"). lint.sh checks the includes; this checks what the linker would resolve, so a
# prototype written by hand in a .c file cannot call upward either. ctest runs it on the
# library's objects (unit.check_layers) and on a pair that calls upward
# (unit.check_layers_rejects_upward, which must fail).
#
# An object's floor comes from its source path as CMake names objects:
# .../<target>.dir/<path under src/>.o (e.g. sbx_e2b.dir/e2b/http.c.o); anything up to a last
# "/src/" in that path is dropped. Arguments may be ;-separated lists ($<TARGET_OBJECTS:...>).
# libcurl is the E2B provider's (its wire leaves, floor 3, and above): an object of util/ or
# contract/ that uses a curl_ symbol fails too ("contract/ knows nothing of E2B").
# Prints file: what, one line per upward use; exit 1 if any, 2 on usage errors.
set -euo pipefail
# shellcheck source=scripts/src-floors.sh
. "$(dirname "$0")/src-floors.sh"

objs=()
for a in "$@"; do
	IFS=';' read -r -a parts <<<"$a"
	objs+=("${parts[@]}")
done
[ ${#objs[@]} -gt 0 ] || { echo "usage: check-layers.sh OBJECT..." >&2; exit 2; }

declare -A floor_of=() def_in=() def_floor=()
for o in "${objs[@]}"; do
	[ -f "$o" ] || { echo "check-layers: $o: no such object" >&2; exit 2; }
	rel=${o#*.dir/}
	rel=${rel##*/src/}
	rel=${rel%.o}
	floor_of[$o]=$(src_floor "$rel")
	if [ "${floor_of[$o]}" -eq 9 ]; then
		echo "check-layers: $o: not an object of src/ ($rel)" >&2
		exit 2
	fi
	# Global definitions: every upper-case type but U (undefined); weak ones count too.
	while read -r sym _; do
		[ -n "${def_in[$sym]:-}" ] && continue
		def_in[$sym]=$rel
		def_floor[$sym]=${floor_of[$o]}
	done < <(nm -P --defined-only "$o" | awk '$2 ~ /^[A-TV-Z]$/ { print $1 }')
done

bad=0
for o in "${objs[@]}"; do
	rel=${o#*.dir/}
	rel=${rel##*/src/}
	rel=${rel%.o}
	while read -r sym; do
		to=${def_floor[$sym]:-}
		case $sym in
		curl_*)
			if [ "${floor_of[$o]}" -lt 3 ]; then
				echo "src/$rel: uses $sym, of libcurl, which only src/e2b/ (floor 3 and above) may use"
				bad=1
			fi
			;;
		esac
		[ -n "$to" ] || continue # from another library (libc, curl, jansson)
		if [ "$to" -gt "${floor_of[$o]}" ]; then
			echo "src/$rel: uses $sym, defined in src/${def_in[$sym]} (floor $to, above its floor ${floor_of[$o]}): an upward call"
			bad=1
		fi
	done < <(nm -P -u "$o" | awk '{ print $1 }')
done
[ $bad -eq 0 ] && echo "check-layers: ${#objs[@]} objects, no upward call"
exit $bad
