/* report.h: the frequency report written by wordfreq. */
#ifndef REPORT_H
#define REPORT_H

#include "wordfreq.h"

#include <stdio.h>

/*
 * Write the report: totals, then the `top` most frequent words (ties in
 * alphabetical order) with their counts and shares, one per line.
 * 0, or -1 when out of memory or on a write error.
 */
int report_write(FILE *out, const char *source, const struct word_table *t, size_t top);

#endif
