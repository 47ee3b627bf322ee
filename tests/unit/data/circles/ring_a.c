/*
 * Three files of one folder that call each other in a ring (ring_a.c -> ring_b.c -> ring_c.c
 * -> ring_a.c), with prototypes written by hand, and top.c above them all: check-circles.sh
 * must name the ring and leave top.c out of it (ctest unit.check_circles_rejects).
 */
int circles_b(int n);
int circles_a(int n);

int circles_a(int n)
{
	return n > 0 ? circles_b(n - 1) : 0;
}
