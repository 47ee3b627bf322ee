#!/usr/bin/env bash
# check-citations.sh [ROOT [FILE...]]: no comment or doc cites a note that does not ship. A
# reader can open docs/, fake-e2b/README.md and E2B's public sources, not the team's issue
# tracker ("issue" or "issues" then a number, "#" allowed), its E2B protocol notes (the file
# named e2b, a dash, protocol) or a brief on style or design; such a citation names the shipped
# section that states the fact instead (CONTRIBUTING.md "Code rules"). "the seed" is not one:
# docs/contract.md defines it.
#
# Checks every text file git would commit under ROOT (default: this repository), or only the
# FILEs given (paths relative to ROOT). A finding is printed as file:line: what; exit 1 if any.
# lint.sh runs it; ctest unit.check_citations checks that it refuses each form.
set -uo pipefail
root=$(cd "${1:-$(dirname "$0")/..}" && pwd) || exit 2
[ $# -gt 0 ] && shift
cd "$root" || exit 2
if [ $# -gt 0 ]; then
	files=("$@")
else
	mapfile -t files < <(git ls-files -co --exclude-standard | sort -u)
fi
existing=()
for f in "${files[@]}"; do [ -f "$f" ] && existing+=("$f"); done
[ ${#existing[@]} -gt 0 ] || exit 0
# Bracketed so that this line does not match itself.
pat='e2b[-]protocol|\bissues? #?[0-9]+|(style|design)[ ]brief'
status=0
while IFS= read -r hit; do
	f=${hit%%:*} rest=${hit#*:}
	n=${rest%%:*} what=${rest#*:}
	echo "$f:$n: cites \"$what\", a note that does not ship: cite the docs/ section that" \
		"states it (CONTRIBUTING.md \"Code rules\")"
	status=1
done < <(printf '%s\0' "${existing[@]}" | xargs -0 grep -HnIiEo -- "$pat" 2>/dev/null)
exit $status
