/* single_header_test.inc compiled as C99. */
#include "tests/single_header_test.inc"
