// efacoll's nonblocking calls as ordinary MPI requests. Each is a generalized request
// (MPI_Grequest_start): a real MPI object, so it mixes with point-to-point requests in one array
// and MPI frees it. MPI does not know when efacoll's work ends, so efacoll completes it
// (MPI_Grequest_complete) itself, in the caller's thread, from the completion calls it intercepts
// (MPI_Wait, MPI_Test and their -all, -any, -some forms, MPI_Request_get_status,
// MPI_Request_free), before passing them to MPI: completing it from the worker that ran the call
// would be an MPI call from a thread MPI may not allow (below MPI_THREAD_MULTIPLE).
// Decision 0036 says why this and not a progress thread completing it.
// While none of efacoll's requests is outstanding, those calls go straight to MPI.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/executor.h"
#include "mpi_shim/call_queue.h"
#include "mpi_shim/shim.h"

namespace efacoll {
namespace shim {
namespace {

struct Entry {
  MPI_Request request = MPI_REQUEST_NULL;  // its key in the table
  std::shared_ptr<PendingCall> call;       // persistent: the last start's (null: never started)
  MPI_Comm comm;                           // whose error handler hears of its failure
  const char* name;                        // the call that started it
  bool completed = false;                  // MPI_Grequest_complete made (once)
  // A persistent call's: its request is MPI's own inactive one (start_persistent), its work
  // made anew by `restart` at each MPI_Start.
  std::function<std::shared_ptr<PendingCall>()> restart;
  bool persistent() const { return static_cast<bool>(restart); }
};

// An entry lives while MPI holds its request (the table's reference, dropped by free_fn) and,
// for one the user freed before its work ended, until efacoll completed it (the orphans'
// reference): MPICH calls free_fn at MPI_Request_free, before the completion.
struct Table {
  std::mutex mutex;  // the entries: another thread's call may start or end one
  std::unordered_map<MPI_Request, std::shared_ptr<Entry>> entries;
  std::vector<std::pair<MPI_Request, std::shared_ptr<Entry>>> orphans;  // freed, still running
  std::atomic<int> outstanding{0};  // entries and orphans: the fast path's test
};

Table& table() {
  static auto* t = new Table();
  return *t;
}

int query_fn(void*, MPI_Status* status) {
  PMPI_Status_set_elements(status, MPI_BYTE, 0);
  PMPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
  return MPI_SUCCESS;
}

// MPI frees the request: the table's reference goes.
int free_fn(void* extra) {
  auto* e = static_cast<Entry*>(extra);
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.entries.find(e->request);
  if (it != t.entries.end() && it->second.get() == e) {
    t.entries.erase(it);
    t.outstanding.fetch_sub(1);
  }
  return MPI_SUCCESS;
}

// MPI_Cancel never reaches it: efacoll refuses that first (nonblocking collectives cannot be
// cancelled, MPI-3.1 section 5.12).
int cancel_fn(void*, int) { return MPI_SUCCESS; }

std::shared_ptr<Entry> find(MPI_Request r) {
  if (r == MPI_REQUEST_NULL) return nullptr;
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.entries.find(r);
  return it == t.entries.end() ? nullptr : it->second;
}

bool ended(const Entry* e) { return !e->call || e->call->done.load(std::memory_order_acquire); }

// Marks it complete for MPI once its work ended (a persistent one's MPI request completes by
// itself); whether it has.
bool complete_if_ended(MPI_Request r, Entry* e) {
  if (!ended(e)) return false;
  if (!e->persistent() && !e->completed) {
    e->completed = true;
    PMPI_Grequest_complete(r);
  }
  return true;
}

// Requests freed by the user before their work ended: completed now where it has (MPI then
// frees them).
void sweep_orphans() {
  Table& t = table();
  std::vector<std::pair<MPI_Request, std::shared_ptr<Entry>>> ready;
  {
    std::lock_guard<std::mutex> lock(t.mutex);
    auto split = std::partition(t.orphans.begin(), t.orphans.end(),
                                [](const auto& o) { return !ended(o.second.get()); });
    ready.assign(split, t.orphans.end());
    t.orphans.erase(split, t.orphans.end());
    t.outstanding.fetch_sub(static_cast<int>(ready.size()));
  }
  for (auto& [r, e] : ready) complete_if_ended(r, e.get());
}

// A failed call of efacoll's among `n` requests: what to report once MPI has completed it.
struct Failure {
  int index;
  std::shared_ptr<Entry> entry;
};

// Completes those of the requests that are efacoll's and ended; appends the failures among them
// (before MPI frees them); returns how many of efacoll's are still running.
int complete_ended(int n, MPI_Request* requests, std::vector<Failure>* failures) {
  sweep_orphans();
  int running = 0;
  for (int i = 0; i < n; ++i) {
    std::shared_ptr<Entry> e = find(requests[i]);
    if (e == nullptr) continue;
    if (!complete_if_ended(requests[i], e.get())) {
      ++running;
    } else if (failures && e->call && !e->call->status.is_ok()) {
      failures->push_back({i, e});
    }
  }
  return running;
}

void add_entry(MPI_Request request, std::shared_ptr<Entry> e) {
  e->request = request;
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.entries[request] = std::move(e);
  t.outstanding.fetch_add(1);
}

bool none_outstanding() { return table().outstanding.load(std::memory_order_acquire) == 0; }

// Raises each failure among the requests MPI just completed (`done(index, &status)`, status null
// where ignored), through its communicator's handler; the status carries its code. Returns the
// first code, or MPI_SUCCESS.
template <typename Done>
int raise_failures(const std::vector<Failure>& failures, Done done) {
  int first = MPI_SUCCESS;
  for (const Failure& f : failures) {
    MPI_Status* s = nullptr;
    if (!done(f.index, &s)) continue;
    const int code = raise_error(f.entry->comm, f.entry->call->status);
    if (f.entry->persistent()) f.entry->call = nullptr;  // reported once, at this completion
    if (s != nullptr) s->MPI_ERROR = code;
    if (first == MPI_SUCCESS) first = code;
  }
  return first;
}

}  // namespace

int start_request(MPI_Comm comm, const char* name, std::shared_ptr<PendingCall> call,
                  MPI_Request* request) {
  auto e = std::make_shared<Entry>();
  e->call = std::move(call);
  e->comm = comm;
  e->name = name;
  const int rc = PMPI_Grequest_start(query_fn, free_fn, cancel_fn, e.get(), request);
  if (rc != MPI_SUCCESS) return rc;
  add_entry(*request, std::move(e));
  return MPI_SUCCESS;
}

int start_persistent(MPI_Comm comm, const char* name,
                     std::function<std::shared_ptr<PendingCall>()> restart, MPI_Request* request) {
  // MPI's own inactive persistent request, a send to MPI_PROC_NULL: MPI_Start, MPI_Wait and the
  // rest keep it (and the caller's handle) as they keep any persistent request, while efacoll's
  // work runs beside it.
  const int rc = PMPI_Send_init(nullptr, 0, MPI_BYTE, MPI_PROC_NULL, 0, comm, request);
  if (rc != MPI_SUCCESS) return rc;
  auto e = std::make_shared<Entry>();
  e->comm = comm;
  e->name = name;
  e->restart = std::move(restart);
  add_entry(*request, std::move(e));
  return MPI_SUCCESS;
}

void requests_finish_all() {
  IdleBackoff backoff;
  for (;;) {
    sweep_orphans();
    Table& t = table();
    bool running = false;
    {
      std::lock_guard<std::mutex> lock(t.mutex);
      for (auto& [r, e] : t.entries) running = running || !ended(e.get());
      running = running || !t.orphans.empty();
    }
    if (!running) return;
    backoff.idle();
  }
}

}  // namespace shim
}  // namespace efacoll

using namespace efacoll;
using namespace efacoll::shim;

EFACOLL_EXPORT int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  if (none_outstanding() || find(*request) == nullptr) return PMPI_Wait(request, status);
  try {
    IdleBackoff backoff;
    std::vector<Failure> failures;
    while (complete_ended(1, request, &failures) > 0) backoff.idle();
    const int rc = PMPI_Wait(request, status);
    const int failed = raise_failures(failures, [&](int, MPI_Status** s) {
      *s = status == MPI_STATUS_IGNORE ? nullptr : status;
      return true;
    });
    return failed != MPI_SUCCESS ? failed : rc;
  } catch (...) {
    return raise_exception(MPI_COMM_WORLD, "MPI_Wait");
  }
}

EFACOLL_EXPORT int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  if (none_outstanding() || find(*request) == nullptr) return PMPI_Test(request, flag, status);
  try {
    std::vector<Failure> failures;
    if (complete_ended(1, request, &failures) > 0) {
      *flag = 0;
      return MPI_SUCCESS;
    }
    const int rc = PMPI_Test(request, flag, status);
    const int failed = raise_failures(failures, [&](int, MPI_Status** s) {
      *s = status == MPI_STATUS_IGNORE ? nullptr : status;
      return *flag != 0;
    });
    return failed != MPI_SUCCESS ? failed : rc;
  } catch (...) {
    return raise_exception(MPI_COMM_WORLD, "MPI_Test");
  }
}

EFACOLL_EXPORT int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  if (none_outstanding()) return PMPI_Waitall(count, requests, statuses);
  try {
    // efacoll's end without MPI's progress (their workers run them), so they are waited for
    // first; MPI's then complete in MPI_Waitall.
    IdleBackoff backoff;
    std::vector<Failure> failures;
    while (complete_ended(count, requests, nullptr) > 0) backoff.idle();
    complete_ended(count, requests, &failures);
    const int rc = PMPI_Waitall(count, requests, statuses);
    const int failed = raise_failures(failures, [&](int i, MPI_Status** s) {
      *s = statuses == MPI_STATUSES_IGNORE ? nullptr : &statuses[i];
      return true;
    });
    return failed != MPI_SUCCESS ? MPI_ERR_IN_STATUS : rc;
  } catch (...) {
    return raise_exception(MPI_COMM_WORLD, "MPI_Waitall");
  }
}

EFACOLL_EXPORT int MPI_Testall(int count, MPI_Request requests[], int* flag,
                               MPI_Status statuses[]) {
  if (none_outstanding()) return PMPI_Testall(count, requests, flag, statuses);
  try {
    std::vector<Failure> failures;
    complete_ended(count, requests, &failures);
    const int rc = PMPI_Testall(count, requests, flag, statuses);
    const int failed = raise_failures(failures, [&](int i, MPI_Status** s) {
      *s = statuses == MPI_STATUSES_IGNORE ? nullptr : &statuses[i];
      return *flag != 0;
    });
    return failed != MPI_SUCCESS ? MPI_ERR_IN_STATUS : rc;
  } catch (...) {
    return raise_exception(MPI_COMM_WORLD, "MPI_Testall");
  }
}

EFACOLL_EXPORT int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag,
                               MPI_Status* status) {
  if (none_outstanding()) return PMPI_Testany(count, requests, index, flag, status);
  try {
    std::vector<Failure> failures;
    complete_ended(count, requests, &failures);
    const int rc = PMPI_Testany(count, requests, index, flag, status);
    const int failed = raise_failures(failures, [&](int i, MPI_Status** s) {
      *s = status == MPI_STATUS_IGNORE ? nullptr : status;
      return *flag && *index == i;
    });
    return failed != MPI_SUCCESS ? failed : rc;
  } catch (...) {
    return raise_exception(MPI_COMM_WORLD, "MPI_Testany");
  }
}

EFACOLL_EXPORT int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  if (none_outstanding()) return PMPI_Waitany(count, requests, index, status);
  IdleBackoff backoff;
  for (;;) {
    int flag = 0;
    const int rc = MPI_Testany(count, requests, index, &flag, status);
    if (rc != MPI_SUCCESS || flag) return rc;
    backoff.idle();
  }
}

EFACOLL_EXPORT int MPI_Testsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                                MPI_Status statuses[]) {
  if (none_outstanding()) return PMPI_Testsome(incount, requests, outcount, indices, statuses);
  try {
    std::vector<Failure> failures;
    complete_ended(incount, requests, &failures);
    const int rc = PMPI_Testsome(incount, requests, outcount, indices, statuses);
    const int failed = raise_failures(failures, [&](int i, MPI_Status** s) {
      for (int k = 0; *outcount != MPI_UNDEFINED && k < *outcount; ++k) {
        if (indices[k] != i) continue;
        *s = statuses == MPI_STATUSES_IGNORE ? nullptr : &statuses[k];
        return true;
      }
      return false;
    });
    return failed != MPI_SUCCESS ? MPI_ERR_IN_STATUS : rc;
  } catch (...) {
    return raise_exception(MPI_COMM_WORLD, "MPI_Testsome");
  }
}

EFACOLL_EXPORT int MPI_Waitsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                                MPI_Status statuses[]) {
  if (none_outstanding()) return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
  IdleBackoff backoff;
  for (;;) {
    const int rc = MPI_Testsome(incount, requests, outcount, indices, statuses);
    if (rc != MPI_SUCCESS || *outcount != 0) return rc;
    backoff.idle();
  }
}

EFACOLL_EXPORT int MPI_Request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
  if (none_outstanding()) return PMPI_Request_get_status(request, flag, status);
  std::shared_ptr<Entry> e = find(request);
  if (e != nullptr && !complete_if_ended(request, e.get())) {
    *flag = 0;
    return MPI_SUCCESS;
  }
  return PMPI_Request_get_status(request, flag, status);
}

EFACOLL_EXPORT int MPI_Request_free(MPI_Request* request) {
  if (none_outstanding()) return PMPI_Request_free(request);
  std::shared_ptr<Entry> e = find(*request);
  if (e != nullptr && e->persistent()) {
    if (!ended(e.get())) {
      ArgError active;
      active.error_class = MPI_ERR_REQUEST;
      active.message = std::string(e->name) +
                       "'s request is active: a persistent collective's request is freed once "
                       "completed (MPI-4.0 section 6.13)";
      return raise_arg_error(e->comm, "MPI_Request_free", active);
    }
    Table& t = table();
    {
      std::lock_guard<std::mutex> lock(t.mutex);
      t.entries.erase(*request);
      t.outstanding.fetch_sub(1);
    }
  } else if (e != nullptr && !complete_if_ended(*request, e.get())) {
    // MPI frees it once complete: efacoll completes it when its work ends.
    Table& t = table();
    std::lock_guard<std::mutex> lock(t.mutex);
    t.orphans.emplace_back(*request, e);
    t.outstanding.fetch_add(1);
  }
  return PMPI_Request_free(request);
}

EFACOLL_EXPORT int MPI_Cancel(MPI_Request* request) {
  std::shared_ptr<Entry> e = none_outstanding() ? nullptr : find(*request);
  if (e == nullptr) return PMPI_Cancel(request);
  ArgError refused;
  refused.error_class = MPI_ERR_REQUEST;
  refused.message = std::string(e->name) +
                    "'s request cannot be cancelled: nonblocking collectives cannot be "
                    "(MPI-3.1 section 5.12)";
  return raise_arg_error(e->comm, "MPI_Cancel", refused);
}

EFACOLL_EXPORT int MPI_Start(MPI_Request* request) { return MPI_Startall(1, request); }

EFACOLL_EXPORT int MPI_Startall(int count, MPI_Request requests[]) {
  if (none_outstanding()) return PMPI_Startall(count, requests);
  try {
    for (int i = 0; i < count; ++i) {
      std::shared_ptr<Entry> e = find(requests[i]);
      if (e == nullptr || !e->persistent()) continue;
      if (!ended(e.get())) {
        ArgError active;
        active.error_class = MPI_ERR_REQUEST;
        active.message = std::string(e->name) + "'s request is already active";
        return raise_arg_error(e->comm, "MPI_Start", active);
      }
      e->call = e->restart();  // queued on the communicator's worker
    }
    return PMPI_Startall(count, requests);
  } catch (...) {
    return raise_exception(MPI_COMM_WORLD, "MPI_Startall");
  }
}
