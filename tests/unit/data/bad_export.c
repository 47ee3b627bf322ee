/* A shared library that leaks non-sbx_ symbols: check-exports.sh must reject it. */
__attribute__((visibility("default"))) int sbx_fine(void);
__attribute__((visibility("default"))) int leaked_helper(void);
__attribute__((visibility("default"))) int sbx__internal(void);

int sbx_fine(void)
{
	return 0;
}

int leaked_helper(void)
{
	return 1;
}

int sbx__internal(void)
{
	return 2;
}
