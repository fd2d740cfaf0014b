/* What PostgreSQL's c.h provides to portability/instr_time.h: its integer
 * type names and bool. */
#ifndef PG_C_H_STANDIN
#define PG_C_H_STANDIN
#include <stdbool.h>
#include <stdint.h>
typedef int32_t int32;
typedef int64_t int64;
typedef uint64_t uint64;
#endif
