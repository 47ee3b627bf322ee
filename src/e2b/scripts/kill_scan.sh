# shellcheck shell=bash
# KILL_SCAN (ours; bash): the functions kill_all_script.sh and kill_tagged_script.sh are
# embedded after (not a script of its own). The seed's scripts found the exec wrappers with
# pgrep and killed their trees as kill_script.sh's k does (pgrep -P, kill, pkill -s): a fork
# and an exec per step. While a fork bomb holds the sandbox at its process cap and most of its
# memory, such a fork is refused or its process OOM-killed, and the kill fails (or, when the
# pgrep was the victim, finds nothing and "succeeds"). These functions do the same with bash
# builtins only (no fork, no subshell, no pipe, no external command), so once the shell runs
# it needs no further process slot:
#   wrappers RE...  sets w to " PID PID ...": every process but this one whose command line,
#                   arguments joined by spaces as pgrep -f sees it (read NUL by NUL from
#                   /proc/PID/cmdline), matches one of the extended regular expressions
#                   (bash's =~ is the same regcomp ERE as pgrep's);
#   kill_by N [-|g] SIGKILLs, for every process PID whose Nth field of /proc/PID/stat after
#                   the command name (1 state, 2 parent pid, 4 session) is in w: PID; with -,
#                   the process group PID; with g, the process group PID is in, then PID;
#   kill_trees      for the wrappers in w, in k's order: the process groups of their
#                   children (pgrep -P; the command's `timeout`, or the exec helper's bash,
#                   leads its own group, which holds the command and a fork bomb: one kill(2)
#                   ends them all), their own groups, every process of their sessions
#                   (pkill -s), the wrappers themselves; then every process of the sessions
#                   in s; then exits 0. A session is killed group by group (g): a kill(2) of
#                   a process group and a fork(2) in it are atomic to each other (the child is
#                   signalled too, or the fork fails), while a kill of each process in turn is
#                   not: under a fork bomb at the cap each kill frees a slot that a process not
#                   yet killed fills with a child the glob's list does not hold. That is what
#                   ends a bomb whose group leader is no wrapper's child any more (its wrapper
#                   died: an orphan; or was killed first, its parent also a wrapper);
#   orphans RE...   sets s to " SID SID ...": the sessions of wrappers that died before their
#                   commands (the box's OOM killer may pick one under a fork bomb), so no
#                   command line names them any more: the pid in each
#                   /tmp/.capybara-exec-*.pid whose "capybara-exec CTL" matches one of the
#                   REs and that is no live process (none, or a zombie). The wrapper leads
#                   its session (setsid), and Linux gives no new process a pid that is still
#                   a live session's id, so what is in such a session is that command's.
# Errors are silenced: the targets may be gone. w and s are lists of decimal pids, split
# unquoted on purpose (SC2086 below), as is a /proc/PID/stat line into its fields.
wrappers() {
	w=;
	local d p l a r;
	for d in /proc/[0-9]*; do
		p=${d#/proc/};
		[ "$p" = $$ ] && continue;
		l=;
		a=;
		while IFS= read -r -d '' a; do l+=" $a"; done 2>/dev/null < "$d/cmdline";
		[ -n "$a" ] && l+=" $a";
		for r; do
			if [[ ${l# } =~ $r ]]; then w+=" $p"; break; fi;
		done;
	done;
};
# shellcheck disable=SC2086 # the stat fields and $g (empty or -) split on purpose; -$3 a pgrp
kill_by() {
	local f=$1 g=$2 d x;
	for d in /proc/[0-9]*; do
		read -r x 2>/dev/null < "$d/stat" || continue;
		set -- ${x##*) };
		[[ "$w " == *" ${!f} "* ]] || continue;
		if [ "$g" = g ]; then kill -9 -$3 ${d#/proc/} 2>/dev/null; else kill -9 $g${d#/proc/} 2>/dev/null; fi;
	done;
};
# shellcheck disable=SC2086 # w holds decimal pids only
kill_trees() {
	local q;
	[ -n "$w$s" ] || exit 0;
	kill_by 2 -;
	for q in $w; do kill -9 -$q 2>/dev/null; done;
	kill_by 4 g;
	for q in $w; do kill -9 $q 2>/dev/null; done;
	w=$s;
	[ -n "$w" ] && kill_by 4 g;
	exit 0;
};
orphans() {
	s=;
	local f p l r x;
	for f in /tmp/.capybara-exec-*.pid; do
		l="capybara-exec ${f%.pid}";
		for r; do
			[[ $l =~ $r ]] || continue;
			p=;
			read -r p 2>/dev/null < "$f";
			if [[ $p =~ ^[0-9]+$ ]]; then
				x=;
				read -r x 2>/dev/null < "/proc/$p/stat";
				x=${x##*) };
				[ -z "$x" ] || [ "${x%% *}" = Z ] && s+=" $p";
			fi;
			break;
		done;
	done;
};
