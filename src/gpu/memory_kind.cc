#include "gpu/memory_kind.h"

#include <dlfcn.h>

#include <mutex>

namespace efacoll {
namespace {

// The few driver ABI values we need (stable since CUDA 4), so this file needs no CUDA headers.
using CUresult = int;
using CUdeviceptr = unsigned long long;
constexpr int kAttrMemoryType = 2, kAttrBufferId = 7, kAttrIsManaged = 8, kAttrDeviceOrdinal = 9;
constexpr unsigned kMemTypeHost = 1, kMemTypeDevice = 2, kMemTypeUnified = 4;

constexpr int kAttrContext = 1;

struct Driver {
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*get_attributes)(unsigned, int*, void**, CUdeviceptr) = nullptr;
  CUresult (*ctx_push)(void*) = nullptr;
  CUresult (*ctx_pop)(void**) = nullptr;
  CUresult (*memcpy)(CUdeviceptr, CUdeviceptr, size_t) = nullptr;
  CUresult (*address_range)(CUdeviceptr*, size_t*, CUdeviceptr) = nullptr;
  // Optional: only to tell which GPU the process already uses.
  CUresult (*ctx_get_current)(void**) = nullptr;
  CUresult (*ctx_get_device)(int*) = nullptr;
  CUresult (*device_bus_id)(char*, int, int) = nullptr;
  void* lib = nullptr;
  bool ok = false;
  std::string why_not;
};

const Driver& driver() {
  static Driver d;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      d.why_not = "libcuda.so.1 not found (no NVIDIA driver)";
      return;
    }
    d.lib = lib;
    d.init = reinterpret_cast<decltype(d.init)>(dlsym(lib, "cuInit"));
    d.get_attributes =
        reinterpret_cast<decltype(d.get_attributes)>(dlsym(lib, "cuPointerGetAttributes"));
    d.ctx_push = reinterpret_cast<decltype(d.ctx_push)>(dlsym(lib, "cuCtxPushCurrent_v2"));
    d.ctx_pop = reinterpret_cast<decltype(d.ctx_pop)>(dlsym(lib, "cuCtxPopCurrent_v2"));
    d.memcpy = reinterpret_cast<decltype(d.memcpy)>(dlsym(lib, "cuMemcpy"));
    d.address_range =
        reinterpret_cast<decltype(d.address_range)>(dlsym(lib, "cuMemGetAddressRange_v2"));
    d.ctx_get_current =
        reinterpret_cast<decltype(d.ctx_get_current)>(dlsym(lib, "cuCtxGetCurrent"));
    d.ctx_get_device = reinterpret_cast<decltype(d.ctx_get_device)>(dlsym(lib, "cuCtxGetDevice"));
    d.device_bus_id =
        reinterpret_cast<decltype(d.device_bus_id)>(dlsym(lib, "cuDeviceGetPCIBusId"));
    if (!d.init || !d.get_attributes || !d.ctx_push || !d.ctx_pop || !d.memcpy ||
        !d.address_range) {
      d.why_not = "libcuda.so.1 lacks the driver functions efacoll needs";
      return;
    }
    CUresult rc = d.init(0);
    if (rc != 0) {
      d.why_not = "cuInit failed with CUDA error " + std::to_string(rc) + " (no usable GPU)";
      return;
    }
    d.ok = true;
  });
  return d;
}

}  // namespace

const char* mem_kind_name(MemKind k) {
  switch (k) {
    case MemKind::kHost:
      return "host";
    case MemKind::kPinnedHost:
      return "pinned host";
    case MemKind::kDevice:
      return "device";
    case MemKind::kManaged:
      return "managed";
  }
  return "?";
}

bool current_gpu_bus_id(std::string* bus_id) {
  const Driver& d = driver();
  const int dev = current_cuda_device();
  char buf[32] = {};
  if (dev < 0 || !d.device_bus_id || d.device_bus_id(buf, sizeof(buf) - 1, dev) != 0) return false;
  *bus_id = buf;
  return true;
}

int current_cuda_device() {
  const Driver& d = driver();
  void* ctx = nullptr;
  int dev = -1;
  if (!d.ok || !d.ctx_get_current || !d.ctx_get_device) return -1;
  if (d.ctx_get_current(&ctx) != 0 || ctx == nullptr || d.ctx_get_device(&dev) != 0) return -1;
  return dev;
}

int cuda_device_count() {
  auto count_fn = reinterpret_cast<CUresult (*)(int*)>(cuda_driver_function("cuDeviceGetCount"));
  int count = 0;
  return count_fn && count_fn(&count) == 0 ? count : 0;
}

void* cuda_driver_function(const char* name) {
  const Driver& d = driver();
  return d.ok ? dlsym(d.lib, name) : nullptr;
}

bool cuda_driver_available(std::string* why_not) {
  const Driver& d = driver();
  if (why_not) *why_not = d.why_not;
  return d.ok;
}

MemInfo query_memory(const void* ptr) {
  MemInfo info;
  const Driver& d = driver();
  if (!d.ok || ptr == nullptr) return info;
  unsigned mem_type = 0;
  unsigned long long buffer_id = 0;
  unsigned is_managed = 0;
  int ordinal = -1;
  int attrs[] = {kAttrMemoryType, kAttrBufferId, kAttrIsManaged, kAttrDeviceOrdinal};
  void* data[] = {&mem_type, &buffer_id, &is_managed, &ordinal};
  // Plain host memory gives success with memory type 0, or an error: host either way.
  if (d.get_attributes(4, attrs, data, reinterpret_cast<CUdeviceptr>(ptr)) != 0) return info;
  if (is_managed) {
    info.kind = MemKind::kManaged;
  } else if (mem_type == kMemTypeDevice || mem_type == kMemTypeUnified) {
    info.kind = MemKind::kDevice;
  } else if (mem_type == kMemTypeHost) {
    info.kind = MemKind::kPinnedHost;
  } else {
    return info;
  }
  info.device = ordinal;
  info.buffer_id = buffer_id;
  return info;
}

Status driver_copy(void* dst, const void* src, size_t bytes, const void* device_ptr) {
  const Driver& d = driver();
  if (!d.ok) return Status(Code::kCuda, "no CUDA driver: " + d.why_not);
  if (bytes == 0) return Status::ok();
  void* context = nullptr;
  int attr = kAttrContext;
  void* data[] = {&context};
  CUresult rc = d.get_attributes(1, &attr, data, reinterpret_cast<CUdeviceptr>(device_ptr));
  if (rc != 0) {
    return Status(Code::kCuda,
                  "cuPointerGetAttributes(CONTEXT) failed with CUDA error " + std::to_string(rc));
  }
  // Memory of CUDA's virtual memory management (cuMemCreate + cuMemMap) belongs to no context:
  // it is reachable from the caller's own, which must then be current.
  void* current = nullptr;
  if (context == nullptr &&
      !(d.ctx_get_current && d.ctx_get_current(&current) == 0 && current != nullptr)) {
    return Status(Code::kCuda, "the memory belongs to no CUDA context, and none is current");
  }
  if (context != nullptr) {
    rc = d.ctx_push(context);
    if (rc != 0)
      return Status(Code::kCuda, "cuCtxPushCurrent failed with CUDA error " + std::to_string(rc));
  }
  rc = d.memcpy(reinterpret_cast<CUdeviceptr>(dst), reinterpret_cast<CUdeviceptr>(src), bytes);
  void* popped = nullptr;
  if (context != nullptr) d.ctx_pop(&popped);
  if (rc != 0) return Status(Code::kCuda, "cuMemcpy failed with CUDA error " + std::to_string(rc));
  return Status::ok();
}

Status driver_allocation_base(const void* ptr, void** base) {
  const Driver& d = driver();
  if (!d.ok) return Status(Code::kCuda, "no CUDA driver: " + d.why_not);
  CUdeviceptr start = 0;
  size_t size = 0;
  CUresult rc = d.address_range(&start, &size, reinterpret_cast<CUdeviceptr>(ptr));
  if (rc != 0)
    return Status(Code::kCuda, "cuMemGetAddressRange failed with CUDA error " + std::to_string(rc));
  *base = reinterpret_cast<void*>(start);
  return Status::ok();
}

}  // namespace efacoll
