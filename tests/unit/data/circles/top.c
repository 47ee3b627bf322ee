/* top.c: above the ring (see ring_a.c); nothing calls it. */
int circles_a(int n);
int circles_top(void);

static int circles_top_helper(void)
{
	return 2;
}

int circles_top(void)
{
	return circles_a(3) + circles_top_helper();
}
