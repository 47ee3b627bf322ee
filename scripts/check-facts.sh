#!/usr/bin/env bash
# check-facts.sh [ROOT]: fail when a fact the tree writes in more than one place differs between
# them (docs/internals/architecture.md "Seams the lint enforces"). Each fact has one source;
# the other places must say the same, in the same order:
#
#   1. the config keys taken from E2B_* variables (README.md "Configuration"): the source is
#      cli/config.c's env_keys table; README.md's key/variable table repeats it (the Node and
#      Python packages leave the rule to serve's initialize).
#   2. the error codes: the source is include/sandbox/error.h's enum; src/contract/error.c
#      names each (sbx_error_code_name: "SBX_EX" for SBX_EX), cli/rpc/fail.c gives each but
#      SBX_EINTERNAL its wire name (lib_names; the others are "internal"), and
#      bindings/protocol/methods.md lists those wire names, "internal" last. The names of the
#      JSON-RPC codes have their source in cli/rpc/fail.c's rpc_names (serve sends them to the
#      packages in initialize's error_codes); methods.md lists them, code and name, in order.
#   3. a constant: an object-like macro is #defined in one file of include/, src/, cli/ and
#      fake-e2b/ (a header the others include), save the exemptions listed with their reason.
#
# (fake-e2b's template table is no longer a copy: the build generates it from
# templates/NAME/Dockerfile, cmake/templates.cmake.)
#
# lint.sh runs it on the tree; ctest unit.check_facts drifts a copy of each place in turn and
# wants it refused. Prints file: what, one line per difference; exit 1 if any.
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2
ROOT=$root perl -e '
use strict;
use warnings;
use File::Find;
my $bad = 0;
sub slurp { my $f = shift; open(my $fh, "<", $f) or do { print "$f: missing\n"; $bad = 1; return "" }; local $/; <$fh> }
sub pairs { my @l = @_; return map { "$l[2*$_]=$l[2*$_+1]" } 0 .. int(@l / 2) - 1 }
sub firsts { my @l = @_; return map { $l[2*$_] } 0 .. int(@l / 2) - 1 }
sub seconds { my @l = @_; return map { $l[2*$_+1] } 0 .. int(@l / 2) - 1 }
sub differ {
	my ($what, $src, $srcf, $got, $gotf) = @_;
	my ($a, $b) = (join(", ", @$src), join(", ", @$got));
	return if $a eq $b;
	print "$gotf: $what differs from $srcf: has [$b], $srcf has [$a]\n";
	$bad = 1;
}

# 1. the E2B_* variables of the config keys
my $cfg = slurp("cli/config.c");
my ($tbl) = $cfg =~ /\benv_keys\[\]\[2\]\s*=\s*\{(.*?)\};/s;
my @c = defined $tbl ? ($tbl =~ /\{"(\w+)",\s*"(\w+)"\}/g) : ();
my @cpairs = pairs(@c);
if (!@c) { print "cli/config.c: no env_keys table\n"; $bad = 1 }
my $readme = slurp("README.md");
my ($conf) = $readme =~ /\n## Configuration\b[^\n]*\n(.*?)\n## /s;
my @r = defined $conf ? ($conf =~ /^\| `(\w+)` \| `(E2B_\w+)`/mg) : ();
differ("the config keys from E2B_* variables", \@cpairs, "cli/config.c",
       [pairs(@r)], "README.md (Configuration)");

# 2. the error codes
my $eh = slurp("include/sandbox/error.h");
my @codes = $eh =~ /^\s*(SBX_E[A-Z]+)\s*=/mg;
if (!@codes) { print "include/sandbox/error.h: no SBX_E* enum\n"; $bad = 1 }
my $ec = slurp("src/contract/error.c");
my ($namefn) = $ec =~ /sbx_error_code_name\(int code\)\s*\{(.*?)\n\}/s;
my @named = defined $namefn ? ($namefn =~ /case (SBX_E[A-Z]+):\s*return "(SBX_E[A-Z]+)";/g) : ();
my @wrong = grep { !/^(\w+)=\1$/ } pairs(@named);
if (@wrong) { print "src/contract/error.c: sbx_error_code_name: ", join(", ", @wrong), "\n"; $bad = 1 }
differ("the codes sbx_error_code_name names", \@codes, "include/sandbox/error.h",
       [firsts(@named)], "src/contract/error.c");
my $fc = slurp("cli/rpc/fail.c");
my ($libt) = $fc =~ /\blib_names\[\] = \{(.*?)\};/s;
my @wire = defined $libt ? ($libt =~ /\{(SBX_E[A-Z]+), "(\w+)"\}/g) : ();
differ("the codes lib_names names", [grep { $_ ne "SBX_EINTERNAL" } @codes],
       "include/sandbox/error.h (all but SBX_EINTERNAL)", [firsts(@wire)],
       "cli/rpc/fail.c");
if ($fc !~ /\bname_of\(.*?return "internal";/s) {
	print "cli/rpc/fail.c: name_of: a code not in the table is not \"internal\"\n";
	$bad = 1;
}
my @wnames = (seconds(@wire), "internal");
my %seen;
my @dup = grep { $seen{$_}++ } @wnames;
if (@dup) { print "cli/rpc/fail.c: lib_names: a wire name twice: @dup\n"; $bad = 1 }
my $mm = slurp("bindings/protocol/methods.md");
my ($list) = $mm =~ /`data\.code` is the library\x27s code name: (.*?)\.\n/s;
$list =~ s/\([^)]*\)//gs if defined $list; # asides name other things
my @doc = defined $list ? ($list =~ /`(\w+)`/g) : ();
differ("the wire names of data.code", \@wnames, "cli/rpc/fail.c", \@doc,
       "bindings/protocol/methods.md");
my ($rpct) = $fc =~ /\brpc_names\[\] = \{(.*?)\};/s;
my @rpc = defined $rpct ? ($rpct =~ /\{(RPC_[A-Z_]+), "(\w+)"\}/g) : ();
if (!@rpc) { print "cli/rpc/fail.c: no rpc_names table\n"; $bad = 1 }
my $rh = slurp("cli/rpc/rpc.h");
my %num = $rh =~ /^#define (RPC_[A-Z_]+)\s+\((-\d+)\)/mg;
my @rpcpairs = map { my ($k, $n) = split /=/; ($num{$k} // $k) . "=$n" } pairs(@rpc);
my ($rlist) = $mm =~ /named by its JSON-RPC code[^:]*: (.*?)\.\n/s;
my @rdoc = defined $rlist ? ($rlist =~ /(-\d+)\s+`(\w+)`/g) : ();
differ("the names of the JSON-RPC codes", \@rpcpairs, "cli/rpc/fail.c (rpc_names)",
       [pairs(@rdoc)], "bindings/protocol/methods.md");

# 3. a constant (an object-like macro) defined in more than one file of include/, src/, cli/,
# fake-e2b/: it belongs in the one header both files include. A name reused for another
# meaning is exempt here, with why.
my %exempt = (
	MIB      => "a unit (1024 * 1024) in the type each file computes in, not a fact",
	COPY_BUF => "two copy loops with buffers of their own sizes",
);
my %def;
my @dirs = grep { -d } qw(include src cli fake-e2b);
my @files;
find({ wanted => sub { push @files, $File::Find::name if /\.[ch]\z/ }, no_chdir => 1 }, @dirs)
    if @dirs;
for my $f (sort @files) {
	open(my $fh, "<", $f) or next;
	while (<$fh>) {
		$def{$1}{$f} = 1 if /^\s*#\s*define\s+([A-Z][A-Z0-9_]*)(?![A-Za-z0-9_(])/;
	}
}
for my $name (sort keys %def) {
	my @in = sort keys %{$def{$name}};
	next if @in < 2 || $exempt{$name};
	print "$in[0]: $name is defined again in ", join(", ", @in[1 .. $#in]),
	    ": define it once, in a header they share\n";
	$bad = 1;
}
exit $bad;
'
