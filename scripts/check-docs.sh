#!/usr/bin/env bash
# check-docs.sh [--ctest LIST] [--cli BIN] [ROOT]: fail when a user or contributor doc names
# something the tree does not have (CONTRIBUTING.md "Docs"). The docs are README.md,
# CONTRIBUTING.md, fake-e2b/README.md and SECURITY.md, docs/*.md, docs/internals/*.md,
# bindings/*/README.md, bindings/MIGRATING.md, bindings/protocol/methods.md, tests/*/README.md,
# bench/README.md and templates/README.md. Outside fenced code blocks:
#
#   1. a markdown link to a file, relative to the doc, names a file or folder of the tree;
#   2. a path in backticks that starts at a top folder (`src/...`, `tests/...`) or is a
#      top-level file names one (from the root, or from the doc's folder); a relative path with
#      a folder and a source suffix (`http/server.c`) is a tail of one; a bare file name
#      (`test_kill.c`) is the name of one; `*` and `?` are globs (`test_http*.c`);
#   3. an identifier in backticks with an underscore (`oom_spares_pid1`, `sbx_sandbox_exec`,
#      `SANDBOX_E2B_BIN`) is a word of the tree's non-Markdown files, or a test case: NAME or
#      GROUP__NAME of a `test_GROUP__NAME` under tests/;
#   4. with --ctest LIST (the output of `ctest -N`, and the literal add_test(NAME ...) of the
#      tree's CMakeLists.txt, for tests a build configuration leaves out): a test name in backticks
#      (`fake.restart`, `fake_isolation`, `integration_test_kill`, `unit.*`) is one of them, and
#      each alternative of a `ctest ... -R A|B` shown matches one;
#   5. with --cli BIN (build/cli/sandbox-e2b): in code blocks and backticks, each
#      `sandbox-e2b CMD` that starts a command line is a command of `BIN --help` and each
#      `--flag` after it is in `BIN CMD --help` or among the global options of `BIN --help`
#      (so is each `--flag` of a synopsis in backticks that starts with a command, `ls --long`,
#      in README.md and docs/*.md: elsewhere such words may be E2B's own CLI);
#      with --fake BIN (build/fake-e2b/fake-e2b), each `--flag` of a `fake-e2b ...` command
#      line is in `BIN --help`.
#
# The names the docs cite from elsewhere (E2B's SDK sources, kernel names) are listed with
# their reason in scripts/doc-names.txt. lint.sh runs checks 1-3 on the tree; ctest
# unit.check_docs runs all five on the build and drifts a copy of a doc for each, wanting it
# refused. Prints doc:line: what, one line per finding; exit 1 if any.
set -uo pipefail
ctest_list='' cli='' fake=''
while [ $# -gt 0 ]; do
	case "$1" in
	--ctest) ctest_list=$2; shift 2 ;;
	--cli) cli=$2; shift 2 ;;
	--fake) fake=$2; shift 2 ;;
	*) break ;;
	esac
done
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
abs() { case "$1" in '' | /*) printf '%s' "$1" ;; *) printf '%s/%s' "$PWD" "$1" ;; esac; }
ctest_list=$(abs "$ctest_list") cli=$(abs "$cli") fake=$(abs "$fake")
cd "$root" || exit 2
shopt -s nullglob
docs=(README.md CONTRIBUTING.md fake-e2b/README.md fake-e2b/SECURITY.md docs/*.md
	docs/internals/*.md bindings/*/README.md bindings/MIGRATING.md bindings/protocol/methods.md
	tests/*/README.md bench/README.md templates/README.md)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The tree: git's files when ROOT is a work tree, else (a copy) every file under it.
if git -C "$root" rev-parse --show-toplevel 2>/dev/null | grep -qxF "$root"; then
	git ls-files -co --exclude-standard >"$tmp/files"
else
	find . -type f ! -path './.git/*' | sed 's|^\./||' >"$tmp/files"
fi
if [ -n "$cli" ]; then
	"$cli" --help >"$tmp/cli.help" 2>&1
	awk '/^Commands:/ { on = 1; next } on && !/^  / { on = 0 } on && /^  [a-z]/ { print $1 }' \
		"$tmp/cli.help" >"$tmp/cli.cmds"
	[ -s "$tmp/cli.cmds" ] || { echo "$cli --help lists no commands" >&2; exit 2; }
	echo help >>"$tmp/cli.cmds" # `sandbox-e2b help CMD`
	while read -r c; do "$cli" "$c" --help >"$tmp/cli.help.$c" 2>&1; done <"$tmp/cli.cmds"
fi
if [ -n "$fake" ]; then
	"$fake" --help >"$tmp/fake.help" 2>&1
	grep -q -- '--port' "$tmp/fake.help" || { echo "$fake --help shows no options" >&2; exit 2; }
fi
FAKE_HELP=$([ -n "$fake" ] && echo "$tmp/fake.help") CTEST=$ctest_list CLI_DIR=$([ -n "$cli" ] && echo "$tmp") FILES=$tmp/files \
	perl - "${docs[@]}" <<'PERL'
use strict;
use warnings;
my (%files, %dirs, %base, %words, %cases, %extern, @ctests, @runs, %cmds);
open(my $lf, "<", $ENV{FILES}) or die;
while (my $f = <$lf>) {
	chomp $f;
	next unless -f $f;
	$files{$f} = 1;
	my ($b) = $f =~ m{([^/]+)$};
	$base{$b} = 1;
	my $d = $f;
	$dirs{$d} = 1 while $d =~ s{/[^/]+$}{};
	# not the docs, and not this check's own lists and drifts
	next if $f =~ /\.md$/ || $f =~ m{^(?:scripts/check-docs\.sh|scripts/doc-names\.txt|tests/unit/check_docs_test\.sh)$} || -B $f;
	open(my $fh, "<", $f) or next;
	local $/;
	my $t = <$fh>;
	$words{$_} = 1 for $t =~ /\w+/g;
	if ($f =~ m{^tests/}) { $cases{$2} = $cases{"$1__$2"} = 1 while $t =~ /\btest_(\w*?)__(\w+)/g }
}
if (open(my $ef, "<", "scripts/doc-names.txt")) {
	while (<$ef>) { s/#.*//; $extern{$_} = 1 for split }
}
if ($ENV{CTEST}) {
	open(my $cf, "<", $ENV{CTEST}) or die "$ENV{CTEST}: $!";
	# ctest -N's tests, and the targets of `cmake --build B --target help` (executables)
	while (<$cf>) {
		push @ctests, $1 if /^\s*Test\s+#\d+:\s+(\S+)/ || /^\.\.\. (\S+)/;
		push @runs, $1 if /^\s*Test\s+#\d+:\s+(\S+)/;
	}
	die "$ENV{CTEST}: no tests listed\n" unless @ctests;
	# and the tests some build configurations leave out (fake_cgroup_v2_vm is not in the
	# sanitizer builds): every add_test(NAME literal) of the tree's CMakeLists.txt
	for my $f (grep { m{(?:^|/)CMakeLists\.txt$} } keys %files) {
		open(my $fh, "<", $f) or next;
		local $/;
		my $t = <$fh>;
		push @ctests, $1 while $t =~ /\badd_test\(\s*NAME\s+([\w.-]+)[\s)]/g;
	}
}
my $clid = $ENV{CLI_DIR} || "";
if ($clid) {
	open(my $cf, "<", "$clid/cli.cmds") or die;
	while (my $c = <$cf>) {
		chomp $c;
		open(my $hf, "<", "$clid/cli.help.$c") or next;
		local $/;
		$cmds{$c} = <$hf>;
	}
	open(my $gf, "<", "$clid/cli.help") or die;
	local $/;
	$cmds{""} = <$gf>;
}
my $fakehelp = "";
if ($ENV{FAKE_HELP}) { open(my $ff, "<", $ENV{FAKE_HELP}) or die; local $/; $fakehelp = <$ff> }
my $bad = 0;
sub say_bad { print "$_[0]\n"; $bad = 1 }
sub globre { my $g = quotemeta shift; $g =~ s/\\\*/[^\/]*/g; $g =~ s/\\\?/[^\/]/g; qr{^$g$} }
sub have {
	my ($p, $dir) = @_;
	$p =~ s{/+$}{};
	for my $c ($p, $dir eq "" ? () : "$dir/$p") {
		my $n = $c;
		1 while $n =~ s{(^|/)(?!\.\./)[^/]+/\.\./}{$1};
		$n =~ s{^(\./)+}{};
		$n =~ s{/\./}{/}g;
		$n = "." if $n eq "";
		return 1 if $n eq "." || $files{$n} || $dirs{$n};
		if ($n =~ /[*?]/) {
			my $re = globre($n);
			return 1 if grep { $_ =~ $re } keys %files, keys %dirs;
		}
	}
	return 0;
}
my $top = qr{^(?:src|cli|fake-e2b|docs|scripts|tests|bindings|bench|templates|include|cmake|examples|packaging|\.ci)/};
my $topfile = qr{^(?:README\.md|CONTRIBUTING\.md|CMakeLists\.txt|LICENSE|NOTICE)$};
my $ext = qr{\.(?:c|h|sh|md|py|ts|js|mjs|cjs|cmake|txt|json|toml|in|service|pc|supp)$};
my $testname = qr{^(?:unit|fake|fuzz|integration|peer|live|cli|bench|bindings)[._][\w.*-]*$};
sub check_ctest_r {
	my ($where, $line) = @_;
	return unless @runs;
	while ($line =~ /\bctest\b[^`#|;&]*?\s-R\s+('[^']*'|"[^"]*"|[^\s`]+)/g) {
		(my $re = $1) =~ s/^['"]|['"]$//g;
		for my $alt (split /\|/, $re) {
			next if $alt =~ /^\^?fuzz/ || !eval { qr/$alt/ }; # a fuzzing build's
			say_bad("$where: `ctest -R $alt`: matches no ctest") unless grep { /$alt/ } @runs;
		}
	}
}
sub check_cli {
	my ($where, $line) = @_;
	check_ctest_r(@_);
	my $start = qr{(?:^\s*(?:\$\s+)?|\$\(\s*|[|;&]\s*|\bsudo\s+|\bexec\s+|\s--\s+)};
	if ($fakehelp) {
		while ($line =~ /${start}(?:[\w.\/-]*\/)?fake-e2b((?:\s+(?!#)[^\s`|;&]+)*)/g) {
			(my $args = $1) =~ s/'[^']*'|"[^"]*"//g;
			for my $fl ($args =~ /(?:^|[\s\[(])(--[a-z][\w-]*)/g) {
				say_bad("$where: `fake-e2b $fl`: no such option")
				    unless $fakehelp =~ /(?<![\w-])\Q$fl\E(?![\w-])/;
			}
		}
	}
	while ($line =~ /${start}sandbox-e2b((?:\s+--?[\w-]+(?:[= ][^\s`|;&-][^\s`|;&]*)?)*)\s+([a-z][\w-]*)((?:\\\||[^`|;&#])*)/g) {
		my ($pre, $c, $rest) = ($1, $2, $3);
		$rest =~ s/'[^']*'|"[^"]*"//g; # the command's own words
		next unless %cmds;
		if (!exists $cmds{$c}) { say_bad("$where: `sandbox-e2b $c`: no such command"); next }
		for my $fl (($pre . " " . $rest) =~ /(?:^|[\s\[(])(--[a-z][\w-]*)/g) {
			next if $cmds{$c} =~ /(?<![\w-])\Q$fl\E(?![\w-])/ || $cmds{""} =~ /(?<![\w-])\Q$fl\E(?![\w-])/;
			say_bad("$where: `sandbox-e2b $c $fl`: no such option");
		}
	}
}
for my $doc (@ARGV) {
	open(my $fh, "<", $doc) or next;
	my $dir = $doc =~ m{^(.*)/} ? $1 : "";
	my ($ln, $fence) = (0, 0);
	my $synopses = $doc =~ m{^(?:README\.md|docs/[\w-]+\.md)$}; # elsewhere `sandbox ls` is E2B's
	while (my $l = <$fh>) {
		$ln++;
		my $where = "$doc:$ln";
		if ($l =~ /^\s*```/) { $fence = !$fence; next }
		if ($fence) { check_cli($where, $l); next }
		check_cli($where, $l) if $l =~ /^(?: {4}|\t)\S/; # an indented code block
		while ($l =~ /\]\(([^)\s]+)\)/g) {
			my $t = $1;
			next if $t =~ m{^(?:[a-z]+:|#)};
			$t =~ s/#.*//;
			next if $t eq "" || $extern{$t};
			say_bad("$where: link $t: no such file") unless have($t, $dir);
		}
		while ($l =~ /`([^`]+)`/g) {
			my $t = $1;
			check_cli($where, $t);
			check_cli($where, "sandbox-e2b $t") # a synopsis: `exec [-t] ID COMMAND`
			    if $synopses && %cmds && $t =~ /^([a-z][\w-]*) / && $1 ne "help" && exists $cmds{$1}
			    && $t =~ /--/;
			next if $t =~ /\s/;
			$t =~ s/[,.;]+$//;
			$t =~ s/:\d+(?:-\d+)?$//;
			$t =~ s/\(\)$//;
			$t =~ s{(?<![\w.])(?:NAME|ID|CMD|N)(?![\w])|\.\.\.}{*}g; # placeholders
			next if $extern{$t} || $t =~ m{^(?:/|~|\$|build/|-)} || $t !~ m{^[\w.*?/+-]+$};
			if ($t =~ $top || $t =~ $topfile) {
				say_bad("$where: `$t`: no such file") unless have($t, $dir);
			} elsif ($t =~ m{/} && $t =~ $ext) {
				my $re = $t =~ /[*?]/ ? globre("*$t") : qr{(?:^|/)\Q$t\E$};
				say_bad("$where: `$t`: no file ends so")
				    unless have($t, $dir) || grep { $_ =~ $re } keys %files;
			} elsif ($t =~ $ext && $t =~ /^[\w.*?+-]+$/ && $t =~ /\w\.\w/) {
				my $re = globre($t);
				say_bad("$where: `$t`: no file of that name")
				    unless $base{$t} || ($t =~ /[*?]/ && grep { $_ =~ $re } keys %base);
			} elsif ($t =~ /^fuzz[._]([\w*]+)$/) {
				# built by a fuzzing build only: tests/fuzz/fuzz_NAME.c is fuzz.NAME and fuzz_NAME
				my $re = globre("tests/fuzz/fuzz_$1.c");
				say_bad("$where: `$t`: no tests/fuzz/fuzz_*.c of that name")
				    unless grep { $_ =~ $re } keys %files;
			} elsif ($t =~ $testname) {
				next unless @ctests;
				my $re = globre($t);
				say_bad("$where: `$t`: no such ctest") unless grep { $_ =~ $re } @ctests;
			} elsif ($t =~ /^[a-zA-Z][a-zA-Z0-9]*(?:__?[a-zA-Z0-9]+)+$/) {
				next if $words{$t} || $cases{$t} || grep { $_ eq $t } @ctests;
				say_bad("$where: `$t`: no such name in the tree (nor a test case)");
			}
		}
	}
}
exit $bad;
PERL
