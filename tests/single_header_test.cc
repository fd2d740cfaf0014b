// The same test as single_header_test.c, compiled as C++11.
#include "tests/single_header_test.c"
