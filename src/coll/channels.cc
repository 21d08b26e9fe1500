#include "coll/channels.h"

#include <algorithm>
#include <numeric>

namespace efacoll {
namespace {

// A channel's view of one buffer: its contiguous sub-buffer is made of segments, each a range
// of the call's buffer.
struct Segment {
  size_t sub_begin, sub_end, real_begin;
};
using BufMap = std::vector<Segment>;

bool map_ref(const BufMap& map, size_t bytes, BufRef* ref) {
  for (const Segment& s : map) {
    if (ref->offset >= s.sub_begin && ref->offset + bytes <= s.sub_end) {
      ref->offset = s.real_begin + (ref->offset - s.sub_begin);
      return true;
    }
  }
  return false;
}

struct Channel {
  RingArgs args;
  std::vector<int> order;  // ring position -> rank
  BufMap send, recv;
  size_t bytes = 0;  // data this channel moves (0: nothing to build)
};

// Allgather and reduce-scatter: position v's block is channel c's part of rank order[v]'s
// block. Returns the segments of the full-layout buffer and sets the own part's segment.
BufMap split_blocks(const RingArgs& args, int c, int channels, Channel* ch, Segment* own) {
  const size_t esize = args.elem_size;
  std::vector<size_t> real_offset(args.nranks + 1, 0);
  for (int b = 0; b < args.nranks; ++b)
    real_offset[b + 1] = real_offset[b] + args.block_counts[b] * esize;
  BufMap full;
  ch->args.block_counts.assign(args.nranks, 0);
  size_t sub = 0;
  for (int v = 0; v < args.nranks; ++v) {
    const int b = ch->order[v];
    size_t begin, len;
    even_slice(args.block_counts[b], channels, c, &begin, &len);
    ch->args.block_counts[v] = len;
    ch->bytes += len * esize;
    full.push_back({sub, sub + len * esize, real_offset[b] + begin * esize});
    if (b == args.rank) *own = {0, len * esize, begin * esize};
    sub += len * esize;
  }
  return full;
}

Channel plan_channel(const ChannelArgs& ca, const RingArgs& args, int c) {
  Channel ch;
  ch.order = ca.rotate_ring ? channel_ring_order(args.nranks, ca.ranks_per_node, c)
                            : channel_ring_order(args.nranks, 0, 0);
  ch.args = args;
  for (int v = 0; v < args.nranks; ++v)
    if (ch.order[v] == args.rank) ch.args.rank = v;
  const size_t esize = args.elem_size;
  Segment own{};
  switch (ca.kind) {
    case CollKind::kAllreduce: {
      const size_t total =
          std::accumulate(args.block_counts.begin(), args.block_counts.end(), size_t(0));
      size_t begin, len;
      even_slice(total, ca.channels, c, &begin, &len);
      ch.args.block_counts = even_blocks(len, args.nranks);
      ch.bytes = len * esize;
      ch.send = ch.recv = {{0, len * esize, begin * esize}};
      break;
    }
    case CollKind::kAllgather:
      ch.recv = split_blocks(args, c, ca.channels, &ch, &own);
      ch.send = {own};
      break;
    default:  // reduce-scatter, not in place
      ch.send = split_blocks(args, c, ca.channels, &ch, &own);
      ch.recv = {own};
      break;
  }
  return ch;
}

// Appends channel c's schedule to `out`, in the call's buffers, message ids and ranks.
Status merge(const Schedule& sub, const Channel& ch, int c, int channels, size_t scratch_base,
             Schedule* out) {
  const BufMap scratch = {{0, sub.scratch_bytes, scratch_base}};
  const uint32_t first = static_cast<uint32_t>(out->ops.size());
  for (Op op : sub.ops) {
    for (BufRef* ref : {&op.src, &op.src2, &op.dst}) {
      const bool used = (ref == &op.dst && op.kind != OpKind::kSend) ||
                        (ref == &op.src && op.kind != OpKind::kRecv) ||
                        (ref == &op.src2 && op.kind == OpKind::kReduce);
      if (!used) continue;
      const BufMap& map = ref->buf == BufId::kSend   ? ch.send
                          : ref->buf == BufId::kRecv ? ch.recv
                                                     : scratch;
      if (ref->buf == BufId::kStage || !map_ref(map, op.bytes, ref)) {
        return Status(Code::kInternal, "channel " + std::to_string(c) +
                                           ": an operation spans parts of different blocks");
      }
    }
    if (op.kind == OpKind::kSend || op.kind == OpKind::kRecv) {
      if (op.msg_id > (kMaxMsgId - c) / channels)
        return Status(Code::kInvalid, "too many chunks for the channels: raise the chunk size");
      op.msg_id = op.msg_id * channels + c;
      op.peer = ch.order[op.peer];
    }
    out->add(op);
  }
  for (uint32_t i = 0; i < sub.ops.size(); ++i)
    for (uint32_t next : sub.successors[i]) out->depend(first + i, first + next);
  return Status::ok();
}

}  // namespace

bool channels_apply(CollKind kind, bool ring_builder, bool inplace) {
  if (kind == CollKind::kAllreduce) return true;
  if (!ring_builder) return false;
  return kind == CollKind::kAllgather || !inplace;
}

namespace {

// The channels' operations step by step, channel after channel within a step: the executor posts
// the lowest index first, and with whole channels one after another the first channel's later
// steps took every posting slot while the others' first messages waited, unmatched, at their
// receivers. Providers that hold unmatched large messages back (shm, udp) then stalled.
Schedule interleave_steps(const Schedule& in) {
  std::vector<uint32_t> order(in.ops.size()), position(in.ops.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return in.ops[a].step < in.ops[b].step; });
  for (uint32_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  Schedule out = in;
  for (uint32_t i = 0; i < order.size(); ++i) {
    out.ops[i] = in.ops[order[i]];
    out.num_deps[i] = in.num_deps[order[i]];
    out.successors[i].clear();
    for (uint32_t next : in.successors[order[i]]) out.successors[i].push_back(position[next]);
  }
  return out;
}

}  // namespace

std::vector<int> channel_ring_order(int nranks, int ranks_per_node, int channel) {
  std::vector<int> order(nranks);
  std::iota(order.begin(), order.end(), 0);
  const int l = ranks_per_node;
  if (l <= 1 || nranks % l != 0 || nranks == l) return order;
  for (int v = 0; v < nranks; ++v) order[v] = (v / l) * l + (v % l + channel) % l;
  return order;
}

Status build_channels(const ChannelArgs& ca, const RingArgs& args, const ChannelBuilder& build,
                      Schedule* out) {
  if (ca.channels <= 1 || args.nranks == 1) return build(args, out);
  Schedule merged;
  bool any = false;
  for (int c = 0; c < ca.channels; ++c) {
    const Channel ch = plan_channel(ca, args, c);
    if (ch.bytes == 0) continue;  // fewer elements than channels: every rank skips alike
    Schedule sub;
    EFACOLL_RETURN_IF_ERROR(build(ch.args, &sub));
    if (!any) merged.algorithm = sub.algorithm;
    any = true;
    EFACOLL_RETURN_IF_ERROR(merge(sub, ch, c, ca.channels, merged.scratch_bytes, &merged));
    merged.scratch_bytes += sub.scratch_bytes;
  }
  if (!any) return build(args, out);  // nothing to move: the one-channel schedule (copies)
  *out = interleave_steps(merged);
  return Status::ok();
}

}  // namespace efacoll
