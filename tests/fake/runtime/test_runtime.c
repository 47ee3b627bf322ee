#define _GNU_SOURCE
#include "runtime.h"
#include <stdio.h>
int main(void)
{
	fk_rt *rt;
	fk_err err = {0};
	if (fk_rt_new(&rt, NULL, &err) < 0) {
		fprintf(stderr, "%s\n", err.message);
		return 1;
	}
	fk_rt_free(rt);
	return 0;
}
