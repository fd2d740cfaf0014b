/* api_test.inc compiled as C99. */
#include "tests/single_header/api_test.inc"
