# bash completion for sandbox-e2b: the tool itself says what fits
# (`sandbox-e2b __complete WORD...`, the last word being completed), so the
# words always match the installed version. Paths fall back to bash's own.
_sandbox_e2b() {
	local IFS=$'\n' cur=${COMP_WORDS[COMP_CWORD]}
	COMPREPLY=($("${COMP_WORDS[0]}" __complete "${COMP_WORDS[@]:1:COMP_CWORD-1}" "$cur" 2>/dev/null))
}
complete -o default -F _sandbox_e2b sandbox-e2b
