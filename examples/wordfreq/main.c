/*
 * wordfreq: count the words of a text file and write a frequency report.
 *
 *   wordfreq [-n TOP] INPUT REPORT
 *
 * Prints a one-line summary on stdout; exits 0, 1 on an I/O error, 2 on bad
 * arguments.
 */
#include "report.h"
#include "wordfreq.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void)
{
	fprintf(stderr, "usage: wordfreq [-n TOP] INPUT REPORT\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct word_table t;
	size_t top = 10;
	FILE *in, *out;
	int argi = 1, rc;

	if (argc > 2 && strcmp(argv[1], "-n") == 0) {
		char *end;
		long v = strtol(argv[2], &end, 10);
		if (*end || v <= 0)
			return usage();
		top = (size_t)v;
		argi = 3;
	}
	if (argc - argi != 2)
		return usage();
	if (!(in = fopen(argv[argi], "r"))) {
		fprintf(stderr, "wordfreq: %s: %s\n", argv[argi], strerror(errno));
		return 1;
	}
	if (word_table_init(&t) < 0 || word_table_count_stream(&t, in) < 0) {
		fprintf(stderr, "wordfreq: cannot count %s\n", argv[argi]);
		fclose(in);
		word_table_free(&t);
		return 1;
	}
	fclose(in);
	if (!(out = fopen(argv[argi + 1], "w"))) {
		fprintf(stderr, "wordfreq: %s: %s\n", argv[argi + 1], strerror(errno));
		word_table_free(&t);
		return 1;
	}
	rc = report_write(out, argv[argi], &t, top);
	if (fclose(out) != 0)
		rc = -1;
	if (rc < 0)
		fprintf(stderr, "wordfreq: cannot write %s\n", argv[argi + 1]);
	else
		printf("wordfreq: %lu words, %zu distinct, top %zu written to %s\n", t.total,
		       t.distinct, top, argv[argi + 1]);
	word_table_free(&t);
	return rc < 0 ? 1 : 0;
}
