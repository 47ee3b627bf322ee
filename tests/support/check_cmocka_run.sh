#!/usr/bin/env bash
# tests/support/check_cmocka_run.sh CTEST SELFCHECK: each way a cmocka test can fail
# (tests/support/cmocka_selfcheck.c), with FK_TEST_FILTER unset, set to the failing test, and set
# to globs joined by '|', is run as a test of a ctest of its own (SKIP_RETURN_CODE 77, as the live
# and VM tests have) and must be reported Failed; the same program failing nowhere must be
# reported Passed, and a filter that names no test Failed. Exit 0 when ctest judged every case so.
set -uo pipefail
ctest=${1:?usage: check_cmocka_run.sh CTEST SELFCHECK}
prog=${2:?usage: check_cmocka_run.sh CTEST SELFCHECK}
dir=$(mktemp -d "${TMPDIR:-/tmp}/cmocka-run-XXXXXX")
trap 'rm -rf "$dir"' EXIT

declare -A want
add() { # name mode filter want
	printf 'add_test(%s "%s")\nset_tests_properties(%s PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT "CMOCKA_SELFCHECK=%s;FK_TEST_FILTER=%s")\n' \
		"$1" "$prog" "$1" "$2" "$3" >>"$dir/CTestTestfile.cmake"
	want[$1]=$4
}
for mode in pass assert setup teardown group_setup group_teardown group_teardown_rc segv abort \
	exit0 many; do
	w=Failed
	[ "$mode" = pass ] && w=Passed
	add "${mode}_unfiltered" "$mode" "" "$w"
	one="*__fails"
	[ "$mode" = many ] && one="*_of_many"
	add "${mode}_filtered" "$mode" "$one" "$w"
	add "${mode}_filtered_globs" "$mode" "*__none|test_selfcheck__fail?|*_of_many" "$w"
done
# a filter that names none of the tests runs none: a failure, not a pass of 0 tests
add none_named pass "*__no_such_test" Failed

out=$(cd "$dir" && "$ctest" --test-dir "$dir" 2>&1)
status=0
for name in $(printf '%s\n' "${!want[@]}" | sort); do
	line=$(grep -E "Test +#[0-9]+: $name " <<<"$out")
	case $line in # a signal's death is ctest's "Subprocess aborted" or "Exception": failed too
	*" Passed "*) got=Passed ;;
	*"***Skipped"* | *"Not Run"*) got=Skipped ;;
	*"***Failed"* | *"***Exception"* | *"Subprocess aborted"* | *"***Timeout"*) got=Failed ;;
	*) got="" ;;
	esac
	if [ "$got" != "${want[$name]}" ]; then
		echo "check_cmocka_run: $name: ctest said ${got:-nothing}, want ${want[$name]}: $line"
		status=1
	fi
done
[ $status -eq 0 ] && echo "check_cmocka_run: all ${#want[@]} cases judged as wanted"
[ $status -eq 0 ] || printf '%s\n' "$out"
exit $status
