/*
 * A contract/ function that calls libcurl, with a prototype written by hand so no include
 * shows it: scripts/check-layers.sh must refuse it (ctest
 * unit.check_layers_rejects_curl_below_e2b), since only src/e2b/ may use libcurl.
 */
int curl_global_init(long flags);
int sbx__layers_test_curl(void);

int sbx__layers_test_curl(void)
{
	return curl_global_init(3);
}
