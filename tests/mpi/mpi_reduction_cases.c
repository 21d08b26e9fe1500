/* MPI_Allreduce, MPI_Reduce_scatter and MPI_Reduce_scatter_block over every predefined
 * (type, op) pair MPI allows (MPI-3.1 section 5.9.2), compared with PMPI. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_cases.h"

static const test_type kTypes[] = {
    /* Not in the standard's groups; both MPIs reduce it as signed char with every op. */
    {MPI_CHAR, "MPI_CHAR", 1, TK_INT},
    {MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", sizeof(signed char), TK_INT},
    {MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", sizeof(unsigned char), TK_UINT},
    {MPI_SHORT, "MPI_SHORT", sizeof(short), TK_INT},
    {MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", sizeof(unsigned short), TK_UINT},
    {MPI_INT, "MPI_INT", sizeof(int), TK_INT},
    {MPI_UNSIGNED, "MPI_UNSIGNED", sizeof(unsigned), TK_UINT},
    {MPI_LONG, "MPI_LONG", sizeof(long), TK_INT},
    {MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", sizeof(unsigned long), TK_UINT},
    {MPI_LONG_LONG, "MPI_LONG_LONG", sizeof(long long), TK_INT},
    {MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", sizeof(unsigned long long), TK_UINT},
    {MPI_INT8_T, "MPI_INT8_T", 1, TK_INT},
    {MPI_INT16_T, "MPI_INT16_T", 2, TK_INT},
    {MPI_INT32_T, "MPI_INT32_T", 4, TK_INT},
    {MPI_INT64_T, "MPI_INT64_T", 8, TK_INT},
    {MPI_UINT8_T, "MPI_UINT8_T", 1, TK_UINT},
    {MPI_UINT16_T, "MPI_UINT16_T", 2, TK_UINT},
    {MPI_UINT32_T, "MPI_UINT32_T", 4, TK_UINT},
    {MPI_UINT64_T, "MPI_UINT64_T", 8, TK_UINT},
    {MPI_FLOAT, "MPI_FLOAT", sizeof(float), TK_FLOAT},
    {MPI_DOUBLE, "MPI_DOUBLE", sizeof(double), TK_FLOAT},
    {MPI_C_BOOL, "MPI_C_BOOL", 1, TK_BOOL},
    {MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX", 2 * sizeof(float), TK_COMPLEX},
    {MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", 2 * sizeof(double), TK_COMPLEX},
    {MPI_BYTE, "MPI_BYTE", 1, TK_BYTE},
    /* Fortran's, callable from C too; sizes as this MPI's Fortran compiler has them (checked). */
    {MPI_INTEGER, "MPI_INTEGER", sizeof(int), TK_INT},
    {MPI_INTEGER8, "MPI_INTEGER8", 8, TK_INT},
    {MPI_REAL, "MPI_REAL", sizeof(float), TK_FLOAT},
    {MPI_DOUBLE_PRECISION, "MPI_DOUBLE_PRECISION", sizeof(double), TK_FLOAT},
    {MPI_DOUBLE_COMPLEX, "MPI_DOUBLE_COMPLEX", 2 * sizeof(double), TK_COMPLEX},
};

static const test_op kOps[] = {
    {MPI_SUM, "MPI_SUM"},   {MPI_PROD, "MPI_PROD"}, {MPI_MIN, "MPI_MIN"},
    {MPI_MAX, "MPI_MAX"},   {MPI_LAND, "MPI_LAND"}, {MPI_LOR, "MPI_LOR"},
    {MPI_LXOR, "MPI_LXOR"}, {MPI_BAND, "MPI_BAND"}, {MPI_BOR, "MPI_BOR"},
    {MPI_BXOR, "MPI_BXOR"},
};

#define COUNT_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const char* const kCollNames[RC_COUNT] = {"allreduce", "reduce_scatter",
                                                  "reduce_scatter_block"};

const test_type* reduction_types(int* n) {
  *n = COUNT_OF(kTypes);
  return kTypes;
}

const test_op* reduction_ops(int* n) {
  *n = COUNT_OF(kOps);
  return kOps;
}

const test_type* find_type(MPI_Datatype type) {
  for (int i = 0; i < COUNT_OF(kTypes); ++i) {
    if (kTypes[i].type == type) return &kTypes[i];
  }
  return NULL;
}

const test_op* find_op(MPI_Op op) {
  for (int i = 0; i < COUNT_OF(kOps); ++i) {
    if (kOps[i].op == op) return &kOps[i];
  }
  return NULL;
}

static int is_op(const test_op* op, MPI_Op which) { return op->op == which; }

/* Logical ops are defined on C integers, not on Fortran's (MPI-3.1 section 5.9.2). */
static int is_fortran_integer(MPI_Datatype type) {
  return type == MPI_INTEGER || type == MPI_INTEGER8;
}

int pair_allowed(const test_type* t, const test_op* op) {
  int minmax = is_op(op, MPI_MIN) || is_op(op, MPI_MAX);
  int arith = is_op(op, MPI_SUM) || is_op(op, MPI_PROD);
  int logical = is_op(op, MPI_LAND) || is_op(op, MPI_LOR) || is_op(op, MPI_LXOR);
  int bitwise = is_op(op, MPI_BAND) || is_op(op, MPI_BOR) || is_op(op, MPI_BXOR);
  switch (t->kind) {
    case TK_INT:
    case TK_UINT: return !(logical && is_fortran_integer(t->type));
    case TK_FLOAT: return minmax || arith;
    case TK_BOOL: return logical;
    case TK_COMPLEX: return arith;
    case TK_BYTE: return bitwise;
    default: return 0;
  }
}

/* Host MPIs that compare some unsigned types as signed in MIN/MAX: Open MPI 4.1.2-4.1.4
 * MPI_UNSIGNED_LONG (open-mpi/ompi#10525); MPICH 4.0 every unsigned C type (pmodels/mpich#6083:
 * MIN of 10 and 200 as MPI_UNSIGNED_CHAR is 200 in Debian's 4.0.2). */
static int pmpi_minmax_is_signed(const test_type* t) {
  if (t->kind != TK_UINT) return 0;
#if defined(MPICH_NUMVERSION) && MPICH_NUMVERSION >= 40000000 && MPICH_NUMVERSION < 40100000
  return 1;
#else
  return t->type == MPI_UNSIGNED_LONG;
#endif
}

/* Values chosen so that every result is exact and overflow-free (Open MPI 4.1's own 8-bit
 * MPI_SUM is wrong on overflow): small sums, products of mostly 1 with rare 2 and -1, logical
 * inputs with zeros, full random bits where only comparisons and bit operations see them. */
static void gen_value(const test_type* t, MPI_Op op, uint64_t h, int rank, unsigned char* dst) {
  const int sum = op == MPI_SUM, prod = op == MPI_PROD;
  const int logical = op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR;
  int prod_value = 1;
  if (prod) {
    unsigned r = (unsigned)((h >> 8) % 8);
    if (r == 0 && rank < 6) prod_value = 2;
    if (r == 1 && t->kind != TK_UINT) prod_value = -1;
  }
  switch (t->kind) {
    case TK_INT:
    case TK_UINT:
    case TK_BYTE: {
      int64_t v;
      if (sum) {
        if (t->kind == TK_INT) {
          v = t->size == 1 ? (int64_t)(h % 7) - 3 : (int64_t)(h % 2001) - 1000;
        } else {
          v = t->size == 1 ? (int64_t)(h % 4) : (int64_t)(h % 2001);
        }
      } else if (prod) {
        v = prod_value;
      } else if (logical) {
        v = ((h >> 4) % 4 == 0) ? 0 : 1 + (int64_t)((h >> 12) % 100);
      } else {
        v = (int64_t)h;
        /* Where the host MPI compares unsigned values as signed in MIN/MAX, their top bit is
         * kept clear so that PMPI is a valid reference. */
        if (pmpi_minmax_is_signed(t) && (op == MPI_MIN || op == MPI_MAX) && t->size < 8)
          v &= (INT64_C(1) << (8 * t->size - 1)) - 1;
        else if (pmpi_minmax_is_signed(t) && (op == MPI_MIN || op == MPI_MAX))
          v &= INT64_MAX;
      }
      memcpy(dst, &v, t->size); /* little-endian: the low bytes */
      return;
    }
    case TK_FLOAT: {
      double v = sum ? (double)(h % 101) - 50 : prod ? prod_value : ((double)(h % 4001) - 2000) / 2;
      if (t->size == sizeof(float)) {
        float f = (float)v;
        memcpy(dst, &f, sizeof(f));
      } else {
        memcpy(dst, &v, sizeof(v));
      }
      return;
    }
    case TK_BOOL:
      dst[0] = (h >> 4) % 4 != 0;
      return;
    case TK_COMPLEX: {
      double re, im;
      if (sum) {
        re = (double)(h % 21) - 10;
        im = (double)((h >> 20) % 21) - 10;
      } else {
        static const double kFactors[][2] = {{1, 1}, {1, -1}, {0, 1}, {-1, 0}};
        unsigned r = (unsigned)((h >> 8) % 12);
        re = r < 4 ? kFactors[r][0] : 1;
        im = r < 4 ? kFactors[r][1] : 0;
      }
      if (t->size == 2 * sizeof(float)) {
        float f[2] = {(float)re, (float)im};
        memcpy(dst, f, sizeof(f));
      } else {
        double d[2] = {re, im};
        memcpy(dst, d, sizeof(d));
      }
      return;
    }
    default:
      memset(dst, 0, t->size);
  }
}

void reduction_fill(const test_type* t, MPI_Op op, void* buf, size_t count, uint64_t seed,
                    int rank) {
  unsigned char* p = buf;
  for (size_t i = 0; i < count; ++i) gen_value(t, op, tu_hash(seed, (uint64_t)rank, i), rank, p + i * t->size);
}

/* Irregular reduce_scatter counts with zeros: rank r gets a share weighted 0 (r % 3 == 1) or
 * r + 1, the remainder going to the last rank with a share. */
void reduction_split_counts(int total, int size, int* counts) {
  long weight_sum = 0;
  int last = 0;
  for (int r = 0; r < size; ++r) {
    int w = r % 3 == 1 ? 0 : r + 1;
    weight_sum += w;
    if (w) last = r;
  }
  long given = 0;
  for (int r = 0; r < size; ++r) {
    int w = r % 3 == 1 ? 0 : r + 1;
    counts[r] = (int)((long)total * w / weight_sum);
    given += counts[r];
  }
  counts[last] += (int)(total - given);
}

#if TU_HAVE_LARGE_COUNT
/* The large-count forms, their counts as MPI_Count. */
static int call_c(int pmpi, red_coll coll, const void* send, void* recv, int count,
                  const int* counts, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  int size;
  PMPI_Comm_size(comm, &size);
  MPI_Count* wide = malloc(sizeof(MPI_Count) * (size_t)size);
  for (int r = 0; r < size; ++r) wide[r] = counts[r];
  int rc;
  switch (coll) {
    case RC_ALLREDUCE:
      rc = pmpi ? PMPI_Allreduce_c(send, recv, count, type, op, comm)
                : MPI_Allreduce_c(send, recv, count, type, op, comm);
      break;
    case RC_REDUCE_SCATTER:
      rc = pmpi ? PMPI_Reduce_scatter_c(send, recv, wide, type, op, comm)
                : MPI_Reduce_scatter_c(send, recv, wide, type, op, comm);
      break;
    default:
      rc = pmpi ? PMPI_Reduce_scatter_block_c(send, recv, count, type, op, comm)
                : MPI_Reduce_scatter_block_c(send, recv, count, type, op, comm);
  }
  free(wide);
  return rc;
}
#endif

static int call(int pmpi, red_coll coll, const void* send, void* recv, int count, const int* counts,
                MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
#if TU_HAVE_LARGE_COUNT
  if (g_test.large_count) return call_c(pmpi, coll, send, recv, count, counts, type, op, comm);
#endif
  switch (coll) {
    case RC_ALLREDUCE:
      return pmpi ? PMPI_Allreduce(send, recv, count, type, op, comm)
                  : MPI_Allreduce(send, recv, count, type, op, comm);
    case RC_REDUCE_SCATTER:
      return pmpi ? PMPI_Reduce_scatter(send, recv, counts, type, op, comm)
                  : MPI_Reduce_scatter(send, recv, counts, type, op, comm);
    default:
      return pmpi ? PMPI_Reduce_scatter_block(send, recv, count, type, op, comm)
                  : MPI_Reduce_scatter_block(send, recv, count, type, op, comm);
  }
}

int run_reduction(red_coll coll, const test_type* t, const test_op* op, int count, MPI_Comm comm,
                  const char* comm_name, int inplace, int expect_engine) {
  int rank, size;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  char name[256];
  snprintf(name, sizeof(name), "%s%s/%s/%s/%s/n=%d%s", kCollNames[coll],
           g_test.large_count ? "_c" : "", comm_name, t->name, op->name, count,
           inplace ? "/inplace" : "");

  int* counts = malloc(sizeof(int) * (size_t)size);
  size_t send_elems, recv_elems;
  if (coll == RC_ALLREDUCE) {
    send_elems = recv_elems = (size_t)count;
  } else if (coll == RC_REDUCE_SCATTER) {
    reduction_split_counts(count, size, counts);
    send_elems = (size_t)count;
    recv_elems = (size_t)counts[rank];
  } else {
    send_elems = (size_t)count * (size_t)size;
    recv_elems = (size_t)count;
  }
  const size_t send_bytes = send_elems * t->size, recv_bytes = recv_elems * t->size;
  const size_t buf_bytes = inplace ? send_bytes : recv_bytes;

  unsigned char* send = malloc(send_bytes + 1);
  reduction_fill(t, op->op, send, send_elems, tu_seed(name), rank);
  unsigned char* send_copy = malloc(send_bytes + 1);
  memcpy(send_copy, send, send_bytes);
  guarded_buf got, want;
  tu_gbuf_alloc(&got, buf_bytes);
  tu_gbuf_alloc(&want, buf_bytes);
  if (inplace) {
    memcpy(got.base, send, send_bytes);
    memcpy(want.base, send, send_bytes);
  }
  const void* sendarg = inplace ? MPI_IN_PLACE : (const void*)send;

  counter_snapshot before;
  tu_counters(&before);
  int rc = call(0, coll, sendarg, got.base, count, counts, t->type, op->op, comm);
  char why[512] = "";
  int counted = tu_counted_once(&before, coll == RC_ALLREDUCE ? EFACOLL_ALLREDUCE
                                                              : EFACOLL_REDUCE_SCATTER,
                                expect_engine, why, sizeof(why));
  int rc_ref = call(1, coll, inplace ? MPI_IN_PLACE : (const void*)send_copy, want.base, count,
                    counts, t->type, op->op, comm);

  int ok;
  if (rc != MPI_SUCCESS || rc_ref != MPI_SUCCESS) {
    ok = tu_check(0, name, "MPI returned %d (%s), PMPI returned %d", rc, tu_error_class_name(rc),
                  rc_ref);
  } else {
    long bad = tu_first_mismatch(t, got.base, want.base, recv_elems);
    if (bad >= 0) {
      char a[64], b[64];
      tu_format_elem(t, got.base, (size_t)bad, a, sizeof(a));
      tu_format_elem(t, want.base, (size_t)bad, b, sizeof(b));
      ok = tu_check(0, name, "first mismatch at index %ld of %zu: got %s, expected %s", bad,
                    recv_elems, a, b);
    } else if (!tu_gbuf_untouched_from(&got, got.bytes)) {
      ok = tu_check(0, name, "wrote past the end of the receive buffer (%zu bytes)", got.bytes);
    } else if (!inplace && memcmp(send, send_copy, send_bytes) != 0) {
      ok = tu_check(0, name, "modified the send buffer");
    } else {
      ok = tu_check(counted, name, "%s", why);
    }
  }
  free(counts);
  free(send);
  free(send_copy);
  tu_gbuf_free(&got);
  tu_gbuf_free(&want);
  return ok;
}

/* Elements in about 100000 bytes (many 4096-byte chunks), odd so that blocks are uneven. */
static int multi_chunk_count(const test_type* t) { return (int)(100000 / t->size) | 1; }

static void pair_counts(const test_type* t, int size, red_coll coll, int* counts, int* n) {
  int big = multi_chunk_count(t);
  int k = 0;
  counts[k++] = 0;
  counts[k++] = 1;
  if (size - 1 > 1) counts[k++] = size - 1;
  counts[k++] = 1001;
  /* reduce_scatter_block's count is per rank: keep the total about the same. */
  counts[k++] = coll == RC_REDUCE_SCATTER_BLOCK ? big / size : big;
  *n = k;
}

/* The table's sizes are what this MPI says (Fortran's depend on its compiler's options). */
static void check_type_sizes(void) {
  static int checked;
  if (checked++) return;
  for (int ti = 0; ti < COUNT_OF(kTypes); ++ti) {
    int bytes = 0;
    PMPI_Type_size(kTypes[ti].type, &bytes);
    tu_check(bytes == (int)kTypes[ti].size, "type table", "%s is %d bytes here, not %zu",
             kTypes[ti].name, bytes, kTypes[ti].size);
  }
}

void reduction_cases_full(MPI_Comm comm, const char* comm_name) {
  int size;
  check_type_sizes();
  PMPI_Comm_size(comm, &size);
  for (int ti = 0; ti < COUNT_OF(kTypes); ++ti) {
    const test_type* t = &kTypes[ti];
    for (int oi = 0; oi < COUNT_OF(kOps); ++oi) {
      const test_op* op = &kOps[oi];
      if (!pair_allowed(t, op)) continue;
      for (int c = 0; c < RC_COUNT; ++c) {
        int counts[8], n;
        pair_counts(t, size, (red_coll)c, counts, &n);
        for (int k = 0; k < n; ++k) {
          if (g_test.quick && counts[k] > 1001) continue;
          run_reduction((red_coll)c, t, op, counts[k], comm, comm_name, 0, 1);
        }
        run_reduction((red_coll)c, t, op, 1001, comm, comm_name, 1, 1);
        if (!g_test.quick && (oi == 0 || op->op == MPI_BXOR || t->kind == TK_BOOL)) {
          run_reduction((red_coll)c, t, op, counts[n - 1], comm, comm_name, 1, 1);
        }
      }
    }
  }
}

void reduction_cases_subset(MPI_Comm comm, const char* comm_name) {
  static const struct {
    MPI_Datatype type;
    MPI_Op op;
  } kPicks[] = {
      {MPI_INT, MPI_SUM},       {MPI_DOUBLE, MPI_MAX},        {MPI_UINT8_T, MPI_BXOR},
      {MPI_LONG, MPI_PROD},     {MPI_C_BOOL, MPI_LOR},        {MPI_C_DOUBLE_COMPLEX, MPI_SUM},
      {MPI_FLOAT, MPI_MIN},     {MPI_UNSIGNED_SHORT, MPI_LAND},
  };
  int size;
  PMPI_Comm_size(comm, &size);
  for (int i = 0; i < COUNT_OF(kPicks); ++i) {
    const test_type* t = find_type(kPicks[i].type);
    const test_op* op = find_op(kPicks[i].op);
    for (int c = 0; c < RC_COUNT; ++c) {
      int counts[8], n;
      pair_counts(t, size, (red_coll)c, counts, &n);
      for (int k = 1; k < n; ++k) { /* skip 0: the full run covers it */
        for (int inplace = 0; inplace < 2; ++inplace) {
          run_reduction((red_coll)c, t, op, counts[k], comm, comm_name, inplace, 1);
        }
      }
    }
  }
}
