#include "core/schedule.h"

#include <sstream>

namespace efacoll {

uint32_t Schedule::add(const Op& op) {
  ops.push_back(op);
  successors.emplace_back();
  num_deps.push_back(0);
  return static_cast<uint32_t>(ops.size() - 1);
}

void Schedule::depend(uint32_t before, uint32_t after) {
  successors[before].push_back(after);
  ++num_deps[after];
}

std::string Schedule::describe() const {
  static const char* const kKinds[] = {"send", "recv", "reduce", "copy"};
  static const char* const kBufs[] = {"send", "recv", "scratch", "stage"};
  std::ostringstream out;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    out << i << ": " << kKinds[static_cast<int>(op.kind)] << " step " << op.step << " " << op.bytes
        << "B";
    if (op.kind == OpKind::kSend || op.kind == OpKind::kRecv) {
      out << " peer " << op.peer << " msg " << op.msg_id;
    }
    if (op.kind != OpKind::kSend) {
      out << " dst " << kBufs[static_cast<int>(op.dst.buf)] << "+" << op.dst.offset;
    }
    if (op.kind != OpKind::kRecv) {
      out << " src " << kBufs[static_cast<int>(op.src.buf)] << "+" << op.src.offset;
    }
    out << " ->";
    for (uint32_t s : successors[i]) out << " " << s;
    out << "\n";
  }
  return out.str();
}

}  // namespace efacoll
