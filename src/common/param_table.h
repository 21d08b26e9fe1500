// The one table of EFACOLL_* parameters: name, kind, default, documentation.
// docs/configuration.md is generated from it (efacoll_params --markdown).
// X(id, name, kind, default, doc)   kind: kText | kInteger | kBool | kBytes | kSeconds
#define EFACOLL_PARAMS(X)                                                                         \
  X(kProvider, "EFACOLL_PROVIDER", kText, "efa",                                                  \
    "libfabric provider for efacoll's own traffic. Default efa; anything else (tcp, shm, udp, "   \
    "sockets) is used only when named here, with a warning that it is not EFA.")                  \
  X(kHostBuffers, "EFACOLL_HOST_BUFFERS", kBool, "0",                                             \
    "Run collectives on host buffers through efacoll too (by default only GPU buffers are).")     \
  X(kRouteAgree, "EFACOLL_ROUTE_AGREE", kInteger, "64",                                          \
    "The ranks of a communicator agree which way its calls go (efacoll or MPI) and how their "    \
    "buffers lie (all host, all GPU, or mixed) at each of its first 16 blocking calls and every "  \
    "this many after: one small MPI_Allreduce each time. In between a rank whose buffers differ " \
    "from the agreement joins the agreed way (staging or copying its own data), so calls are "    \
    "right whatever each rank passes; the agreement only picks the fast way. 1: every call.")     \
  X(kGpu, "EFACOLL_GPU", kBool, "1",                                                              \
    "0: GPU buffers are not run by efacoll (they are staged through host memory to MPI, or "      \
    "handed to it where it is CUDA-aware).")                                                      \
  X(kEnable, "EFACOLL_ENABLE", kBool, "1",                                                        \
    "0 passes every call to the MPI library untouched (fabric is not opened).")                   \
  X(kDebug, "EFACOLL_DEBUG", kText, "WARN", "Log level: NONE, WARN, INFO or TRACE.")              \
  X(kDebugSubsys, "EFACOLL_DEBUG_SUBSYS", kText, "ALL",                                           \
    "Comma list of INIT,NET,COLL,GPU,TOPO,TUNE,ENV (or ALL); ^LIST excludes.")                    \
  X(kDebugFile, "EFACOLL_DEBUG_FILE", kText, "",                                                  \
    "Log to this file instead of stderr; %h becomes the host name, %p the pid.")                  \
  X(kStats, "EFACOLL_STATS", kBool, "0",                                                          \
    "At MPI_Finalize, rank 0 prints a table per collective: calls run by efacoll, calls passed "  \
    "to MPI with the reasons, bytes and time.")                                                   \
  X(kChunkSize, "EFACOLL_CHUNK_SIZE", kBytes, "524288",                                           \
    "Pipelining unit: each block moves in chunks of at most this many bytes. Unset, the tuner "   \
    "picks it per call (64 KiB to 4 MiB, at most 64 chunks a block); set, it is used as "         \
    "given.")                                                                                     \
  X(kChannels, "EFACOLL_CHANNELS", kInteger, "0",                                                 \
    "Independent rings/trees per call, each on its share of the data, its own chunk stream "      \
    "and (as many channels as NICs) its own NIC; across nodes each channel's ring crosses from "  \
    "a different GPU. 0: the tuner picks 1 to 8.")                                                \
  X(kTimeout, "EFACOLL_TIMEOUT", kSeconds, "300",                                                 \
    "A collective whose peers do not answer within this many seconds fails with an error "        \
    "naming the step and the silent ranks; a process whose provider call has held its thread "    \
    "this long, and 10 s at least (it never returned), aborts, saying so.")                       \
  X(kForceMrLocal, "EFACOLL_FORCE_MR_LOCAL", kBool, "0",                                          \
    "Register local buffers and pass descriptors even where the provider does not ask "           \
    "(FI_MR_LOCAL): exercises EFA's registration rules on tcp/shm/udp.")                          \
  X(kMrCacheEntries, "EFACOLL_MR_CACHE_ENTRIES", kInteger, "64",                                  \
    "Registrations of efacoll's own buffers kept for reuse (where the provider wants "            \
    "registered memory).")                                                                        \
  X(kRequireGdr, "EFACOLL_REQUIRE_GDR", kBool, "0",                                               \
    "Fail at MPI_Init unless GPU data can cross the fabric by GPUDirect RDMA (FI_HMEM).")         \
  X(kHmem, "EFACOLL_HMEM", kText, "auto",                                                         \
    "GPU data on the fabric: auto (device pointers go to the provider where it offers FI_HMEM "   \
    "and a trial registration of GPU memory at MPI_Init succeeds, through a dma-buf where the "   \
    "driver exports one; staged through pinned host memory otherwise), on (the same, and "        \
    "MPI_Init fails where it cannot), off (always staged).")                                      \
  X(kGdrFlush, "EFACOLL_GDR_FLUSH", kText, "auto",                                                \
    "Flush GPUDirect RDMA writes (cuFlushGPUDirectRDMAWrites) after data from the fabric lands "  \
    "in GPU memory, before GPU work reads it: auto (on GPUs before Hopper, such as p4d's A100, "  \
    "as aws-ofi-nccl does), 1 or 0.")                                                             \
  X(kStageSlots, "EFACOLL_STAGE_SLOTS", kInteger, "8",                                            \
    "Pinned host slots per direction (each one chunk) for GPU data through a provider "           \
    "without FI_HMEM.")                                                                           \
  X(kIdleProgressUs, "EFACOLL_IDLE_PROGRESS_US", kInteger, "500",                                 \
    "Between collectives a thread progresses the provider this often (microseconds; 0: off): "    \
    "manual-progress providers (udp, EFA on libfabric < 2.1) need it for peers still finishing.") \
  X(kNic, "EFACOLL_NIC", kText, "auto",                                                           \
    "The libfabric domains (NICs) efacoll's endpoints open. auto: the EFAs nearest to this "      \
    "rank's GPU (its current CUDA device, else local rank modulo the node's GPUs), divided "      \
    "among the ranks on that GPU; with several, messages are striped over them by tag. Or names " \
    "separated by commas (e.g. rdmap79s0-rdm, or tcp's eth0,lo). Without EFA: the provider's "    \
    "first domain.")                                                                              \
  X(kProtocol, "EFACOLL_PROTOCOL", kText, "auto",                                                 \
    "auto (one-sided RDMA writes where the provider writes natively, EFA on p5 with libfabric "   \
    ">= 1.18, and on shm, which a message longer than its receive stops for good), send (tagged " \
    "messages only) or rdma (one-sided writes for large messages).")                              \
  X(kRdmaThreshold, "EFACOLL_RDMA_THRESHOLD", kBytes, "65536",                                    \
    "With the one-sided protocol, messages of at least this size are written; smaller ones "      \
    "are sent. On shm under EFACOLL_PROTOCOL=auto at most its inject size + 1 (4097): a longer "  \
    "sent message that no receive takes holds back its sender's later sends there.")              \
  X(kGpuHostPathMax, "EFACOLL_GPU_HOST_PATH_MAX", kBytes, "65536",                                \
    "GPU calls in which no rank moves more than this many bytes (send + receive) run on pinned "  \
    "host copies instead of the staged GPU pipeline: lower latency for small messages. Where "    \
    "ranks of one node share a GPU, the tuner chooses between these paths and IPC by times it "   \
    "measures at the communicator's first GPU call.")                                             \
  X(kTopoDumpFile, "EFACOLL_TOPO_DUMP_FILE", kText, "",                                           \
    "Write the detected topology (GPUs, NICs, PCI distances, NVLink peers, nearest NICs per "     \
    "GPU) to this file at MPI_Init; %h becomes the host name, %p the pid.")                       \
  X(kIpcChunkSize, "EFACOLL_IPC_CHUNK_SIZE", kBytes, "32M",                                       \
    "Inside one node GPU data moves through CUDA IPC (NVLink or PCIe peer access) in rounds of "  \
    "this size; each rank holds a device workspace of twice this. 0: never through IPC.")         \
  X(kIpcDirect, "EFACOLL_IPC_DIRECT", kBool, "1",                                                 \
    "Inside one node, read and write the peers' own GPU buffers (each allocation mapped once) "   \
    "instead of rounds through a workspace.")                                                     \
  X(kIpcLlMax, "EFACOLL_IPC_LL_MAX", kBytes, "2M",                                                \
    "Inside one node, GPU calls in which each rank pushes at most this many bytes to its peers "  \
    "(together: (ranks-1) x the vector for allreduce, (ranks-1) x a block otherwise) use the "    \
    "low-latency protocol: one kernel pushes the data into the peers' memory and waits on flags " \
    "there, with no host barrier. Each rank's workspace grows by about twice this. 0: off. "      \
    "Under MPI_THREAD_MULTIPLE such calls lend efacoll's lock while their kernel waits, so "      \
    "threads' calls may come in any order; but the application's device-wide synchronisations "   \
    "made meanwhile (cudaFree, cudaDeviceSynchronize) wait for such a kernel, as with NCCL's, "   \
    "and threads that free GPU memory while others' calls wait may wait for each other until "    \
    "EFACOLL_TIMEOUT; 0 avoids that. efacoll frees its own GPU memory only between such calls.")  \
  X(kIpcLlLend, "EFACOLL_IPC_LL_LEND", kBool, "1",                                                \
    "Under MPI_THREAD_MULTIPLE, low-latency calls lend efacoll's lock while their kernel waits, " \
    "on a stream of their own ordered after the legacy default stream by an event, which costs "  \
    "a call about 1 us (15.0 against 14.3 us at 8 bytes, one H200). 0: they keep the lock on "    \
    "the blocking stream, as a single-threaded MPI's do, and such calls of different threads "    \
    "(and hierarchical calls with such a node phase) must then come in one order on every rank, " \
    "as NCCL asks of its kernels; for codes that make collectives from one thread at a time.")    \
  X(kIpcLlSeqStart, "EFACOLL_IPC_LL_SEQ_START", kInteger, "0",                                    \
    "Testing: the low-latency protocol's sequence number before a communicator's first call. "    \
    "4294967290 crosses the wrap of its 32-bit packed flags within a few calls.")                 \
  X(kNodeSize, "EFACOLL_NODE_SIZE", kInteger, "0",                                                \
    "Declare nodes of this many consecutive world ranks (0: nodes are host names). Lets one "     \
    "machine run the hierarchical (multi-node) algorithms, e.g. 4 ranks as 2 nodes of 2.")        \
  X(kHierIpc, "EFACOLL_HIER_IPC", kBool, "1",                                                     \
    "Across nodes, GPU allreduce reduce-scatters and allgathers inside each node over CUDA IPC "  \
    "and crosses nodes on each rank's slice only. 0: every phase goes through the fabric.")       \
  X(kRdMaxBytes, "EFACOLL_RD_MAX_BYTES", kBytes, "65536",                                         \
    "Calls of at most this many bytes use the recursive algorithms (log2 P steps: doubling for "  \
    "allreduce and allgather, halving for reduce-scatter) instead of the ring (P-1 steps).")      \
  X(kAlgo, "EFACOLL_ALGO", kText, "auto",                                                         \
    "Force an algorithm: ring, tree (allreduce), rd / rh (recursive doubling / halving), hier "   \
    "(allreduce across nodes), for every collective it exists for, or per collective: "           \
    "allreduce:tree,allgather:rd,reduce_scatter:ring. auto: chosen per call.")                    \
  X(kTune, "EFACOLL_TUNE", kText, "auto",                                                         \
    "Where the cost model's parameters come from: auto (p4d or p5 defaults on those instances, "  \
    "local defaults elsewhere), calibrate (each communicator measures its links, then every "     \
    "algorithm at 64 B-2 MiB, at creation), p4d, p5, local, file:PATH (key = value lines, see "   \
    "docs/model.md), or off (no model: recursive algorithms up to EFACOLL_RD_MAX_BYTES, the "     \
    "ring above). EFACOLL_DEBUG=TRACE with SUBSYS TUNE explains each choice.")                    \
  X(kTuneTrials, "EFACOLL_TUNE_TRIALS", kText, "auto",                                            \
    "Online trials: where the cost model predicts several algorithms within 1.25x of each other " \
    "for a call shape, its first calls run each in turn, this many runs of consecutive calls "    \
    "(8 up to 64 KiB, 3 below 4 MiB, 1 above) each, and all ranks keep the one whose slowest "    \
    "rank's median was least, if it beat the model's pick by over 5 % (logged at INFO, TUNE). "   \
    "auto: 7 with EFACOLL_TUNE=calibrate, else 0 (the model's pick stands).")                     \
  X(kSteerMpi, "EFACOLL_STEER_MPI", kBool, "1",                                                   \
    "When EFA is present, point the host MPI's own libfabric traffic at EFA (variables the user " \
    "set are never overridden).")
