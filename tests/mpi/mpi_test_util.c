#define _GNU_SOURCE /* RTLD_DEFAULT */
#include "mpi_test_util.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

test_ctx g_test;

void tu_init(void) {
  memset(&g_test, 0, sizeof(g_test));
  PMPI_Comm_rank(MPI_COMM_WORLD, &g_test.world_rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &g_test.world_size);
  g_test.max_reports = 50;
  const char* quick = getenv("EFACOLL_MPI_TEST_QUICK");
  g_test.quick = quick && atoi(quick) != 0;
  *(void**)&g_test.get_counters = dlsym(RTLD_DEFAULT, "efacoll_get_counters");
  *(void**)&g_test.provider = dlsym(RTLD_DEFAULT, "efacoll_provider");
  const char* prov = g_test.provider ? g_test.provider() : NULL;
  g_test.engine_active = prov != NULL;
  if (g_test.world_rank == 0) {
    if (!g_test.get_counters || !g_test.provider) {
      printf("efacoll's C API not found (library not preloaded?): counter checks skipped, and "
             "the run fails unless EFACOLL_TEST_BASELINE=1\n");
    } else {
      printf("efacoll provider: %s\n", prov ? prov : "(none: efacoll inactive)");
    }
    fflush(stdout);
  }
}

unsigned long long tu_engine_calls(void) {
  int (*get)(efacoll_collective, efacoll_counters*) = NULL;
  *(void**)&get = dlsym(RTLD_DEFAULT, "efacoll_get_counters");
  unsigned long long total = 0;
  for (int k = 0; get && k < EFACOLL_NUM_COLLECTIVES; ++k) {
    efacoll_counters c;
    if (get((efacoll_collective)k, &c) == 0) total += c.engine_calls;
  }
  return total;
}

static int baseline_run(void) {
  const char* baseline = getenv("EFACOLL_TEST_BASELINE");
  return baseline && atoi(baseline) != 0;
}

const char* tu_efacoll_absence(void) {
  if (baseline_run()) return NULL;
  const char* (*provider)(void) = NULL;
  *(void**)&provider = dlsym(RTLD_DEFAULT, "efacoll_provider");
  if (!provider || !dlsym(RTLD_DEFAULT, "efacoll_get_counters"))
    return "efacoll's C API not found: libefacoll.so is not loaded";
  if (!provider()) return "efacoll is loaded but inactive (efacoll_provider() is NULL)";
  return NULL;
}

int tu_efacoll_ran(void) {
  int rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (baseline_run()) return 1;
  const char* why = tu_efacoll_absence();
  unsigned long long mine = why ? 0 : tu_engine_calls(), all = 0;
  PMPI_Allreduce(&mine, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (!why && all == 0) why = "efacoll ran none of the calls";
  if (why && rank == 0) {
    printf("FAIL efacoll_ran: %s (EFACOLL_TEST_BASELINE=1 marks a run without efacoll)\n", why);
    fflush(stdout);
  }
  return why == NULL;
}

int tu_finish(void) {
  if (!tu_efacoll_ran()) g_test.failed++;
  long local[2] = {g_test.passed, g_test.failed}, total[2] = {0, 0};
  PMPI_Allreduce(local, total, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (g_test.world_rank == 0) {
    printf("%ld passed, %ld failed\n", total[0], total[1]);
    fflush(stdout);
  }
  return total[1] == 0 ? 0 : 1;
}

int tu_check(int ok, const char* case_name, const char* fmt, ...) {
  if (ok) {
    g_test.passed++;
    return 1;
  }
  g_test.failed++;
  if (g_test.failed <= g_test.max_reports) {
    char details[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(details, sizeof(details), fmt, ap);
    va_end(ap);
    printf("FAIL %s rank %d: %s\n", case_name, g_test.world_rank, details);
    if (g_test.failed == g_test.max_reports) {
      printf("rank %d: further failures are counted, not printed\n", g_test.world_rank);
    }
    fflush(stdout);
  }
  return 0;
}

void tu_counters(counter_snapshot* s) {
  memset(s, 0, sizeof(*s));
  if (!g_test.get_counters) return;
  s->valid = 1;
  for (int k = 0; k < EFACOLL_NUM_COLLECTIVES; ++k) {
    if (g_test.get_counters((efacoll_collective)k, &s->c[k]) != 0) s->valid = 0;
  }
}

static void append(char* why, size_t n, const char* text) {
  size_t len = strlen(why);
  if (len + 1 < n) snprintf(why + len, n - len, "%s%s", len ? "; " : "", text);
}

int tu_counted_once(const counter_snapshot* before, efacoll_collective coll, int expect_engine,
                    char* why, size_t n) {
  if (!before->valid) return 1;
  if (expect_engine == 1 && !g_test.engine_active) return 1;
  counter_snapshot now;
  tu_counters(&now);
  if (!now.valid) {
    append(why, n, "efacoll_get_counters failed");
    return 0;
  }
  int ok = 1;
  char text[256];
  for (int k = 0; k < EFACOLL_NUM_COLLECTIVES; ++k) {
    unsigned long long de = now.c[k].engine_calls - before->c[k].engine_calls;
    unsigned long long dm = now.c[k].mpi_calls - before->c[k].mpi_calls;
    unsigned long long want_e = (k == (int)coll && expect_engine == 1) ? 1 : 0;
    unsigned long long want_m = (k == (int)coll && expect_engine == 0) ? 1 : 0;
    if (de != want_e || dm != want_m) {
      snprintf(text, sizeof(text),
               "counters of collective %d: engine_calls +%llu (want +%llu), mpi_calls +%llu "
               "(want +%llu)",
               k, de, want_e, dm, want_m);
      append(why, n, text);
      ok = 0;
    }
  }
  return ok;
}

/* splitmix64 finalizer over a combination of the inputs. */
uint64_t tu_hash(uint64_t seed, uint64_t a, uint64_t b) {
  uint64_t z = seed ^ (a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full);
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t tu_seed(const char* text) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *text; ++text) h = (h ^ (unsigned char)*text) * 1099511628211ull;
  return h;
}

void tu_fill_random(void* buf, size_t bytes, uint64_t seed, int rank) {
  unsigned char* p = buf;
  for (size_t i = 0; i < bytes; i += 8) {
    uint64_t v = tu_hash(seed, (uint64_t)rank, i);
    size_t n = bytes - i < 8 ? bytes - i : 8;
    memcpy(p + i, &v, n);
  }
}

long tu_first_mismatch(const test_type* t, const void* got, const void* want, size_t count) {
  const unsigned char* a = got;
  const unsigned char* b = want;
  switch (t->kind) {
    case TK_FLOAT:
    case TK_COMPLEX: {
      size_t parts = t->kind == TK_COMPLEX ? 2 : 1;
      size_t psize = t->size / parts;
      for (size_t i = 0; i < count * parts; ++i) {
        int eq;
        if (psize == sizeof(float)) {
          float x, y;
          memcpy(&x, a + i * psize, psize);
          memcpy(&y, b + i * psize, psize);
          eq = x == y;
        } else {
          double x, y;
          memcpy(&x, a + i * psize, psize);
          memcpy(&y, b + i * psize, psize);
          eq = x == y;
        }
        if (!eq) return (long)(i / parts);
      }
      return -1;
    }
    case TK_LONG_DOUBLE:
      for (size_t i = 0; i < count; ++i) {
        long double x, y;
        memcpy(&x, a + i * t->size, sizeof(x));
        memcpy(&y, b + i * t->size, sizeof(y));
        if (x != y) return (long)i;
      }
      return -1;
    default:
      if (memcmp(a, b, count * t->size) == 0) return -1;
      for (size_t i = 0; i < count; ++i) {
        if (memcmp(a + i * t->size, b + i * t->size, t->size) != 0) return (long)i;
      }
      return -1;
  }
}

void tu_format_elem(const test_type* t, const void* buf, size_t i, char* out, size_t n) {
  const unsigned char* p = (const unsigned char*)buf + i * t->size;
  switch (t->kind) {
    case TK_INT: {
      int64_t v = 0;
      switch (t->size) {
        case 1: { int8_t x; memcpy(&x, p, 1); v = x; break; }
        case 2: { int16_t x; memcpy(&x, p, 2); v = x; break; }
        case 4: { int32_t x; memcpy(&x, p, 4); v = x; break; }
        default: memcpy(&v, p, 8); break;
      }
      snprintf(out, n, "%lld", (long long)v);
      return;
    }
    case TK_UINT:
    case TK_BOOL:
    case TK_BYTE: {
      uint64_t v = 0;
      memcpy(&v, p, t->size < 8 ? t->size : 8); /* little-endian */
      snprintf(out, n, t->kind == TK_BYTE ? "0x%llx" : "%llu", (unsigned long long)v);
      return;
    }
    case TK_FLOAT:
    case TK_COMPLEX: {
      size_t parts = t->kind == TK_COMPLEX ? 2 : 1;
      size_t psize = t->size / parts;
      double v[2] = {0, 0};
      for (size_t k = 0; k < parts; ++k) {
        if (psize == sizeof(float)) {
          float x;
          memcpy(&x, p + k * psize, psize);
          v[k] = x;
        } else {
          memcpy(&v[k], p + k * psize, psize);
        }
      }
      if (parts == 2) {
        snprintf(out, n, "(%g,%g)", v[0], v[1]);
      } else {
        snprintf(out, n, "%g", v[0]);
      }
      return;
    }
    case TK_LONG_DOUBLE: {
      long double x;
      memcpy(&x, p, sizeof(x));
      snprintf(out, n, "%Lg", x);
      return;
    }
  }
  snprintf(out, n, "?");
}

void tu_gbuf_alloc(guarded_buf* b, size_t bytes) {
  b->bytes = bytes;
  b->base = malloc(bytes + TU_GUARD_BYTES);
  if (!b->base) {
    fprintf(stderr, "rank %d: out of memory (%zu bytes)\n", g_test.world_rank, bytes);
    PMPI_Abort(MPI_COMM_WORLD, 2);
  }
  memset(b->base, TU_SENTINEL, bytes + TU_GUARD_BYTES);
}

void tu_gbuf_free(guarded_buf* b) {
  free(b->base);
  b->base = NULL;
}

int tu_gbuf_untouched_from(const guarded_buf* b, size_t from) {
  for (size_t i = from; i < b->bytes + TU_GUARD_BYTES; ++i) {
    if (b->base[i] != TU_SENTINEL) return 0;
  }
  return 1;
}

const char* tu_error_class_name(int cls) {
  static char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (cls == MPI_SUCCESS) return "MPI_SUCCESS";
  if (PMPI_Error_string(cls, text, &len) != MPI_SUCCESS) return "?";
  return text;
}

unsigned long long tu_proc_kib_field(const char* file, const char* key) {
  FILE* f = fopen(file, "r");
  if (!f) return 0;
  char line[256];
  unsigned long long kib = 0;
  const size_t n = strlen(key);
  while (fgets(line, sizeof(line), f)) {
    if (strncmp(line, key, n) == 0 && line[n] == ':' && sscanf(line + n + 1, "%llu", &kib) == 1)
      break;
  }
  fclose(f);
  return kib * 1024;
}
