// api_test.inc compiled as C++11.
#include "tests/single_header/api_test.inc"
