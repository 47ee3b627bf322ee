/* ring_b.c: calls ring_c.c (see ring_a.c). A comment naming circles_a ties nothing. */
int circles_c(int n);
int circles_b(int n);

int circles_b(int n)
{
	return circles_c(n) + 1;
}
