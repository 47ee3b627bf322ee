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
#   3. the templates of templates/: each templates/NAME/Dockerfile (its useradd, HOME, WORKDIR,
#      and the modes it gives its directories) is fake-e2b/runtime/template.c's entry NAME
#      (user, uid, gid, home, workdir, dirs with their modes).
#
# lint.sh runs it on the tree; ctest unit.check_facts drifts a copy of each place in turn and
# wants it refused. Prints file: what, one line per difference; exit 1 if any.
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2
ROOT=$root perl -e '
use strict;
use warnings;
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

# 3. templates/NAME/Dockerfile against fake-e2b/runtime/template.c
my $tc = slurp("fake-e2b/runtime/template.c");
for my $df (sort glob("templates/*/Dockerfile")) {
	my ($name) = $df =~ m{^templates/([^/]+)/};
	my $d = slurp($df);
	$d =~ s/\\\n/ /g;
	my %want;
	if ($d =~ /useradd\b([^\n&]*)/) {
		my $u = $1;
		($want{uid}) = $u =~ /--uid (\d+)/;
		($want{gid}) = $u =~ /--gid (\d+)/;
		($want{home}) = $u =~ /--home-dir (\S+)/;
		($want{user}) = $u =~ /(\S+)\s*$/;
	}
	($want{workdir}) = $d =~ /^WORKDIR (\S+)/m;
	my ($envhome) = $d =~ /^ENV HOME=(\S+)/m;
	if (defined $envhome && defined $want{home} && $envhome ne $want{home}) {
		print "$df: ENV HOME=$envhome but useradd --home-dir $want{home}\n";
		$bad = 1;
	}
	my @dirs;
	while ($d =~ /chmod (0[0-7]{3}) ((?:\/\S+ ?)+)/g) {
		my $mode = $1;
		push @dirs, map { "$_ $mode" } split " ", $2;
	}
	my ($entry) = $tc =~ /\{\s*\.id = "\Q$name\E",(.*?)\n    \}/s;
	if (!defined $entry) {
		print "fake-e2b/runtime/template.c: no template \"$name\" ($df has one)\n";
		$bad = 1;
		next;
	}
	my %got;
	($got{$_}) = $entry =~ /\.$_ = "?([^",]+)"?,/ for qw(user uid gid home workdir);
	for my $k (qw(user uid gid home workdir)) {
		my ($w, $g) = ($want{$k} // "?", $got{$k} // "?");
		next if $w eq $g;
		print "fake-e2b/runtime/template.c: template \"$name\": $k is $g, $df says $w\n";
		$bad = 1;
	}
	my ($dirsvar) = $entry =~ /\.dirs = (\w+),/;
	my ($dl) = defined $dirsvar ? ($tc =~ /\b\Q$dirsvar\E\[\] = \{(.*?)\};/s) : ();
	my @tdirs = defined $dl ? ($dl =~ /\{"([^"]+)", (0[0-7]{3}),/g) : ();
	my %tmode = @tdirs;
	# the exec helper (a file, not a directory): fake-e2b writes it, 0755, where exec_helper is set
	my $helper = $entry =~ /\.exec_helper = true,/;
	if ($helper && !grep { $_ eq "/opt/capybara-exec 0755" } @dirs) {
		print "fake-e2b/runtime/template.c: template \"$name\" has the exec helper, $df does not install /opt/capybara-exec 0755\n";
		$bad = 1;
	}
	for my $dm (@dirs) {
		my ($p, $m) = split " ", $dm;
		next if $helper && $dm eq "/opt/capybara-exec 0755";
		next if ($tmode{$p} // "") eq $m;
		print "fake-e2b/runtime/template.c: template \"$name\": $p is ",
		    (defined $tmode{$p} ? "mode $tmode{$p}" : "missing"), ", $df gives it $m\n";
		$bad = 1;
	}
}
exit $bad;
'
