/* The implementation file as a unity build, or a project header that
 * includes tickclock.h, produces it: system headers come first, so the C
 * library has already settled what it declares (under -std=c11: no POSIX,
 * no GNU) before tickclock's implementation is compiled. Built as C11 and
 * as C++17, at -O0 and -O3, with the warnings users build with (BUILD). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TICKCLOCK_IMPLEMENTATION
#include "tickclock.h"
