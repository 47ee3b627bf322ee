/* report.c: sort the counted words and write the report (see report.h). */
#include "report.h"

#include <stdlib.h>
#include <string.h>

static int by_count_then_word(const void *a, const void *b)
{
	const struct word_count *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->word, y->word);
}

int report_write(FILE *out, const char *source, const struct word_table *t, size_t top)
{
	struct word_count *words = malloc((t->distinct ? t->distinct : 1) * sizeof(*words));
	size_t n = 0;

	if (!words)
		return -1;
	for (size_t i = 0; i < t->capacity; i++)
		if (t->slots[i].word)
			words[n++] = t->slots[i];
	qsort(words, n, sizeof(*words), by_count_then_word);

	fprintf(out, "word frequencies of %s\n", source);
	fprintf(out, "total words: %lu, distinct: %zu\n", t->total, t->distinct);
	for (size_t i = 0; i < n && i < top; i++)
		fprintf(out, "%3zu. %-16s %5lu  %5.1f%%\n", i + 1, words[i].word, words[i].count,
		        100.0 * (double)words[i].count / (double)t->total);
	free(words);
	return ferror(out) ? -1 : 0;
}
