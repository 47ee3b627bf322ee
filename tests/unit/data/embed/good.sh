# shellcheck shell=sh
# embed-first: lib.sh
# Each kept line joined by one space, comments and indentation dropped, @MACRO@ a C macro.
if [ -n "$1" ]; then
	# a comment inside is dropped too
	echo "?? \ $1" @EMBED_TEST_WORD@;
fi
