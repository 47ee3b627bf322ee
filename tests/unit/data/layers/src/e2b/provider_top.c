/* The provider-floor half of the upward call in ../util/up.c. */
int sbx__layers_test_top(void);

int sbx__layers_test_top(void)
{
	return 41;
}
