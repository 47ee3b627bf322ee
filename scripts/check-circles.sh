#!/usr/bin/env bash
# check-circles.sh FILE.c...: fail when the C files of one folder call each other in a circle
# (docs/internals/architecture.md "Seams the lint enforces"). Within a folder, a file A stands
# above a file B when A calls a function (or uses a variable) that B defines and does not make
# static; the files of a folder must form floors, so no file may reach itself that way. Across
# folders the build enforces the floors (fake-e2b's per-folder libraries, src/'s layer check).
#
# Definitions come from universal-ctags; uses are the identifiers of each file with comments and
# string literals blanked. A name two files of one folder define (a test's main, say) ties
# nothing. lint.sh runs this over src/, cli/ and fake-e2b/; ctest unit.check_circles_rejects
# runs it over a pair that calls each other (it must fail).
#
# CIRCLES_ALLOWED=FILE names the circles that stood when the rule came in, one a line: the
# folder, then its files (names within the folder) in any order. Such a circle passes while it
# holds exactly those files; one that gains a file fails, and a line whose circle is gone or
# smaller fails too (delete or shorten it: the list only shrinks).
# Prints each circle as "folder: a.c -> b.c (names) -> ... -> a.c"; exit 1 if any, 2 on usage.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: check-circles.sh FILE.c..." >&2; exit 2; }
command -v ctags >/dev/null || { echo "check-circles: ctags not installed (apt-get install universal-ctags)" >&2; exit 2; }
files=()
for f in "$@"; do
	case "$f" in *.c) [ -f "$f" ] && files+=("$f") ;; esac
done
[ ${#files[@]} -gt 0 ] || exit 0
# "name file": the functions and variables each file defines for other files to use.
ctags -x --c-kinds=fv --_xformat='%N %F %{file}' "${files[@]}" 2>/dev/null |
	awk '$3 == "-" { print $1, $2 }' |
	ALLOWED=${CIRCLES_ALLOWED:-} perl -e '
		my (%allowed, %def, %dups);
		if ($ENV{ALLOWED}) {
			open(my $al, "<", $ENV{ALLOWED}) or die "check-circles: $ENV{ALLOWED}: $!\n";
			while (<$al>) {
				next if /^\s*(#|$)/;
				my ($d, @f) = split;
				$allowed{ join(" ", $d, sort @f) } = 0;
			}
		}
		while (<STDIN>) {
			my ($name, $file) = split;
			my $dir = $file =~ m{^(.*)/} ? $1 : ".";
			my $k = "$dir\0$name";
			if (exists $def{$k} && $def{$k} ne $file) { $dups{$k} = 1 } else { $def{$k} = $file }
		}
		delete @def{keys %dups};
		my (%edge, %why);
		for my $f (@ARGV) {
			my $dir = $f =~ m{^(.*)/} ? $1 : ".";
			open(my $fh, "<", $f) or next;
			local $/;
			my $src = <$fh>;
			$src =~ s{(/\*.*?\*/)|(//[^\n]*)|("(?:\\.|[^"\\\n])*")|(\x27(?:\\.|[^\x27\\\n])*\x27)}{ }gs;
			my %seen;
			for my $id ($src =~ /\b([A-Za-z_]\w*)\b/g) {
				next if $seen{$id}++;
				my $to = $def{"$dir\0$id"};
				next unless defined $to && $to ne $f;
				$edge{$f}{$to} = 1;
				push @{ $why{"$f\0$to"} }, $id;
			}
		}
		# Tarjan: every strongly connected set of more than one file is a circle.
		my ($index, @stack, %idx, %low, %on, $bad) = (0);
		my $visit;
		$visit = sub {
			my $v = shift;
			$idx{$v} = $low{$v} = $index++;
			push @stack, $v;
			$on{$v} = 1;
			for my $w (sort keys %{ $edge{$v} || {} }) {
				if (!exists $idx{$w}) { $visit->($w); $low{$v} = $low{$w} if $low{$w} < $low{$v} }
				elsif ($on{$w}) { $low{$v} = $idx{$w} if $idx{$w} < $low{$v} }
			}
			return unless $low{$v} == $idx{$v};
			my @scc;
			while (1) { my $w = pop @stack; $on{$w} = 0; push @scc, $w; last if $w eq $v }
			return if @scc < 2;
			my $sdir = $scc[0] =~ m{^(.*)/} ? $1 : ".";
			my $key = join(" ", $sdir, sort map { substr($_, length($sdir) + 1) } @scc);
			if (exists $allowed{$key}) { $allowed{$key} = 1; return }
			my %in = map { $_ => 1 } @scc;
			# One loop through the set, shortest first from its first file, for the message.
			my @order = sort @scc;
			my ($start, %prev) = ($order[0]);
			my @queue = ($start);
			my %reached = ($start => 1);
			my $end;
			BFS: while (@queue) {
				my $u = shift @queue;
				for my $w (sort keys %{ $edge{$u} }) {
					next unless $in{$w};
					if ($w eq $start) { $end = $u; last BFS }
					next if $reached{$w}++;
					$prev{$w} = $u;
					push @queue, $w;
				}
			}
			my @path = ($end);
			unshift @path, $prev{ $path[0] } while $path[0] ne $start;
			push @path, $start;
			my $dir = $start =~ m{^(.*)/} ? $1 : ".";
			my @parts = (substr($path[0], length($dir) + 1));
			for my $i (1 .. $#path) {
				my @n = @{ $why{"$path[$i-1]\0$path[$i]"} };
				my $names = join(", ", @n[0 .. ($#n < 2 ? $#n : 2)]) . (@n > 3 ? ", ..." : "");
				push @parts, "($names) " . substr($path[$i], length($dir) + 1);
			}
			print "$dir: a circle of ", scalar(@scc), " files (", substr($key, length($sdir) + 1),
			    "): ", join(" -> ", @parts),
			    ": move what the lower file needs down to it (or into a file of its own below both)\n";
			$bad = 1;
		};
		for my $v (sort @ARGV) { $visit->($v) unless exists $idx{$v} }
		for my $k (sort grep { !$allowed{$_} } keys %allowed) {
			print "$ENV{ALLOWED}: \"$k\" is no longer a circle of exactly these files: delete",
			    " the line, or list the files the circle still holds\n";
			$bad = 1;
		}
		exit($bad ? 1 : 0);
	' "${files[@]}"
