/* The single header's implementation, in this workspace. */
#define TICKCLOCK_IMPLEMENTATION
#include "tickclock.h"
