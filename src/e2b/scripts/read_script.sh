# shellcheck shell=sh
# READ_SCRIPT PATH N (the seed's, docs/contract.md "Files" read_file; as the sandbox user):
# exit 3 when PATH does not exist, 4 when it is a directory, else the first N bytes of PATH on
# stdout (the provider asks for max_bytes + 1 to detect truncation). Permissions are the
# sandbox user's.
if [ ! -e "$1" ]; then exit 3; fi;
if [ -d "$1" ]; then exit 4; fi;
exec head -c "$2" -- "$1"
