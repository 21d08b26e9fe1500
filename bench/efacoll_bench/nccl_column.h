// The NCCL column: GPU buffers only, where libnccl.so.2 loads on every rank and every rank has
// a GPU of its own (NCCL refuses two ranks on one GPU).
#ifndef EFACOLL_BENCH_NCCL_COLUMN_H
#define EFACOLL_BENCH_NCCL_COLUMN_H

#include <string>

#include "nccl_loader.h"
#include "options.h"

namespace efacoll_bench {

// Collective. true with a communicator and a stream; false with *why (for the header) where
// there is no NCCL column. Errors in NCCL's own set-up end the job.
bool setup_nccl_column(const Options& o, NcclLibrary* nccl, void** stream, std::string* why);

}  // namespace efacoll_bench

#endif
