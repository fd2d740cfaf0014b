/* The one translation unit that holds the implementation (stb style). */
#define TICKCLOCK_IMPLEMENTATION
#include "tickclock.h"
