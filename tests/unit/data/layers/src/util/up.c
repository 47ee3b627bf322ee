/*
 * A util/ function that calls a function of the provider floor (e2b/provider_top.c), with a
 * prototype written by hand so no include shows it: scripts/check-layers.sh must refuse the
 * pair (ctest unit.check_layers_rejects_upward).
 */
int sbx__layers_test_top(void);
int sbx__layers_test_up(void);

int sbx__layers_test_up(void)
{
	return sbx__layers_test_top() + 1;
}
