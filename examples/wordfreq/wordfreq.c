/* wordfreq.c: the word table (see wordfreq.h). */
#include "wordfreq.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define INITIAL_CAPACITY 64
#define MAX_WORD         128

/* FNV-1a: short, and good enough for words. */
static uint64_t hash(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ull;
	}
	return h;
}

int word_table_init(struct word_table *t)
{
	t->slots = calloc(INITIAL_CAPACITY, sizeof(*t->slots));
	t->capacity = INITIAL_CAPACITY;
	t->distinct = 0;
	t->total = 0;
	return t->slots ? 0 : -1;
}

void word_table_free(struct word_table *t)
{
	for (size_t i = 0; i < t->capacity; i++)
		free(t->slots[i].word);
	free(t->slots);
	t->slots = NULL;
	t->capacity = t->distinct = 0;
}

static struct word_count *find_slot(struct word_count *slots, size_t capacity, const char *word,
                                    size_t len)
{
	size_t i = (size_t)hash(word, len) & (capacity - 1);

	while (slots[i].word &&
	       !(strlen(slots[i].word) == len && memcmp(slots[i].word, word, len) == 0))
		i = (i + 1) & (capacity - 1);
	return &slots[i];
}

/* Double the capacity, keeping every entry (load factor stays under 1/2). */
static int grow(struct word_table *t)
{
	size_t capacity = t->capacity * 2;
	struct word_count *slots = calloc(capacity, sizeof(*slots));

	if (!slots)
		return -1;
	for (size_t i = 0; i < t->capacity; i++)
		if (t->slots[i].word)
			*find_slot(slots, capacity, t->slots[i].word, strlen(t->slots[i].word)) =
			    t->slots[i];
	free(t->slots);
	t->slots = slots;
	t->capacity = capacity;
	return 0;
}

int word_table_add(struct word_table *t, const char *word, size_t len)
{
	struct word_count *slot;

	if (2 * (t->distinct + 1) > t->capacity && grow(t) < 0)
		return -1;
	slot = find_slot(t->slots, t->capacity, word, len);
	if (!slot->word) {
		if (!(slot->word = malloc(len + 1)))
			return -1;
		memcpy(slot->word, word, len);
		slot->word[len] = '\0';
		t->distinct++;
	}
	slot->count++;
	t->total++;
	return 0;
}

int word_table_count_stream(struct word_table *t, FILE *in)
{
	char word[MAX_WORD];
	size_t len = 0;
	int ch;

	for (;;) {
		ch = getc(in);
		if (ch != EOF && (isalnum(ch) || (ch == '\'' && len > 0))) {
			if (len < sizeof(word))
				word[len++] = (char)tolower(ch);
			continue;
		}
		while (len > 0 && word[len - 1] == '\'') /* "dogs'" counts as "dogs" */
			len--;
		if (len > 0 && word_table_add(t, word, len) < 0)
			return -1;
		len = 0;
		if (ch == EOF)
			return ferror(in) ? -1 : 0;
	}
}
