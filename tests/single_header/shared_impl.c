/* The implementation in a shared library compiled with
 * -fvisibility=hidden (BUILD): TICKCLOCK_API must still export the API,
 * and only the API (symbols_test.sh). */
#define TICKCLOCK_IMPLEMENTATION
#include "tickclock.h"
