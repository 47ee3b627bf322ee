/*
 * wordfreq.h: a table of word counts.
 *
 * A word is a run of ASCII letters, digits and inner apostrophes ("don't"),
 * folded to lower case. The table is an open-addressing hash table that grows
 * as needed; it owns copies of the words.
 */
#ifndef WORDFREQ_H
#define WORDFREQ_H

#include <stddef.h>
#include <stdio.h>

struct word_count {
	char *word;
	unsigned long count;
};

struct word_table {
	struct word_count *slots; /* capacity entries; word == NULL when empty */
	size_t capacity;          /* a power of two */
	size_t distinct;          /* words stored */
	unsigned long total;      /* words counted, repeats included */
};

/* 0, or -1 when out of memory. */
int word_table_init(struct word_table *t);
void word_table_free(struct word_table *t);

/* Count one occurrence of word[0..len). 0, or -1 when out of memory. */
int word_table_add(struct word_table *t, const char *word, size_t len);

/* Split everything read from `in` into words and count them. 0, or -1 on error. */
int word_table_count_stream(struct word_table *t, FILE *in);

#endif
