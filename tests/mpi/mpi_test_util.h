/* Shared pieces of efacoll_mpi_tests: the run's context, efacoll's C API found at run time,
 * deterministic data, comparison and pass/fail bookkeeping. */
#ifndef EFACOLL_MPI_TEST_UTIL_H
#define EFACOLL_MPI_TEST_UTIL_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "efacoll/efacoll.h"

/* How a type's elements are generated, compared and printed. */
typedef enum { TK_INT, TK_UINT, TK_FLOAT, TK_BOOL, TK_COMPLEX, TK_BYTE, TK_LONG_DOUBLE } type_kind;

typedef struct {
  MPI_Datatype type;
  const char* name;
  size_t size; /* bytes per element; a complex element is two floating values of size/2 */
  type_kind kind;
} test_type;

typedef struct {
  MPI_Op op;
  const char* name;
} test_op;

typedef struct {
  int world_rank, world_size;
  /* efacoll's C API, or NULL when the library is not preloaded. */
  int (*get_counters)(efacoll_collective, efacoll_counters*);
  const char* (*provider)(void);
  int engine_active; /* efacoll_provider() != NULL: regular cases must run on efacoll */
  long passed, failed; /* this rank's checks */
  int max_reports;     /* failure lines printed per rank before going quiet */
  int quick;           /* EFACOLL_MPI_TEST_QUICK=1: fewer cases, for debugging */
  /* The cases call the large-count forms (MPI_Allreduce_c ..., MPI-4), with PMPI's as the
   * reference; only where the MPI defines them (TU_HAVE_LARGE_COUNT). */
  int large_count;
} test_ctx;

#if MPI_VERSION >= 4
#define TU_HAVE_LARGE_COUNT 1
#else
#define TU_HAVE_LARGE_COUNT 0
#endif

extern test_ctx g_test;

void tu_init(void);
/* Sums the counts over MPI_COMM_WORLD, prints "N passed, M failed" on rank 0; the exit code. */
int tu_finish(void);
/* An MPI test proves something about efacoll only where efacoll ran. 1 when efacoll's C API is
 * found, efacoll is active, and it ran at least one call itself (engine calls summed over every
 * collective and rank); else 0, rank 0 printing "FAIL efacoll_ran: ..." with why. A run marked
 * as a baseline without efacoll (EFACOLL_TEST_BASELINE=1) passes as 1. Collective over
 * MPI_COMM_WORLD; needs no tu_init. */
int tu_efacoll_ran(void);
/* Calls efacoll ran itself on this rank (efacoll_get_counters summed over the collectives); 0
 * where the library is not loaded. */
unsigned long long tu_engine_calls(void);
/* This rank's half of it, for programs that cannot make a collective call at the end: NULL when
 * efacoll's C API is found and efacoll is active (or EFACOLL_TEST_BASELINE=1), else why not. */
const char* tu_efacoll_absence(void);

/* A "Key: N kB" line of a /proc file ("/proc/self/status", "VmSize"), in bytes; 0 if absent. */
unsigned long long tu_proc_kib_field(const char* file, const char* key);

/* One check: counts it and, when !ok, prints "FAIL <case> rank R: <details>". Returns ok. */
int tu_check(int ok, const char* case_name, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* --- efacoll's counters --- */
typedef struct {
  int valid;
  efacoll_counters c[EFACOLL_NUM_COLLECTIVES];
} counter_snapshot;

void tu_counters(counter_snapshot* s);
/* Checks that exactly one call of `coll` happened between `before` and now, on efacoll
 * (`expect_engine` 1) or passed to MPI (0); TU_NOT_COUNTED: none at all (efacoll refused it).
 * Vacuous (1) when the C API is absent, and for expected engine calls when efacoll is inactive.
 * Appends a reason to `why` (size `n`) on failure. */
enum { TU_NOT_COUNTED = -1 };
int tu_counted_once(const counter_snapshot* before, efacoll_collective coll, int expect_engine,
                    char* why, size_t n);

/* --- data --- */
uint64_t tu_hash(uint64_t seed, uint64_t a, uint64_t b);
uint64_t tu_seed(const char* text);
void tu_fill_random(void* buf, size_t bytes, uint64_t seed, int rank);

/* Element-wise equality: memcmp for integer/logical/byte data, value equality (so that +0 and
 * -0 agree, and padding is ignored) for floating data. Returns the first differing index or -1. */
long tu_first_mismatch(const test_type* t, const void* got, const void* want, size_t count);
/* Prints element i of buf into out. */
void tu_format_elem(const test_type* t, const void* buf, size_t i, char* out, size_t n);

/* A buffer with guard bytes behind it, filled with a sentinel. */
typedef struct {
  unsigned char* base;
  size_t bytes; /* usable */
} guarded_buf;

enum { TU_GUARD_BYTES = 64, TU_SENTINEL = 0xA5 };

void tu_gbuf_alloc(guarded_buf* b, size_t bytes);
void tu_gbuf_free(guarded_buf* b);
/* 1 if the guard (and bytes [from, bytes) of the usable part) still hold the sentinel. */
int tu_gbuf_untouched_from(const guarded_buf* b, size_t from);

const char* tu_error_class_name(int cls);

#endif
