/*
 * tests/cli/json_get.c: read exactly one JSON object (or array: `list
 * --json`) from stdin (anything else, trailing bytes included, fails with
 * exit 1) and print the value at a dotted key path, where a number indexes an
 * array (e.g. "processes.0.pid"): strings raw, other values as compact JSON,
 * a missing key as "<missing>". With no path, only validate.
 *
 *   sandbox-e2b exec ID --json -- 'echo hi' | cli_json_get stdout
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	json_error_t jerr;
	json_t *root = json_loadf(stdin, 0, &jerr), *v;
	char path[1024], *key, *save = NULL;

	if (!root || !(json_is_object(root) || json_is_array(root))) {
		fprintf(stderr, "cli_json_get: not one JSON object: %s (line %d)\n", jerr.text,
		        jerr.line);
		return 1;
	}
	if (argc < 2)
		return 0;
	snprintf(path, sizeof(path), "%s", argv[1]);
	v = root;
	for (key = strtok_r(path, ".", &save); key && v; key = strtok_r(NULL, ".", &save))
		v = json_is_object(v)  ? json_object_get(v, key)
		    : json_is_array(v) ? json_array_get(v, strtoul(key, NULL, 10))
		                       : NULL;
	if (!v) {
		printf("<missing>\n");
	} else if (json_is_string(v)) {
		fwrite(json_string_value(v), 1, json_string_length(v), stdout);
		putchar('\n');
	} else {
		char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		printf("%s\n", s ? s : "?");
		free(s);
	}
	json_decref(root);
	return 0;
}
