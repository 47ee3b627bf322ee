/* tests/unit/unit.h: what every cmocka unit test includes. */
#ifndef SBX_TESTS_UNIT_H
#define SBX_TESTS_UNIT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the includes above first */
#include <cmocka.h>
#include <string.h>

#endif
