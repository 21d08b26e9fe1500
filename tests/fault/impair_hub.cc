// efacoll_impair_hub: a switch for the namespace tests where the kernel has no netem. It joins
// the switch-side ends of the hosts' veth links (AF_PACKET, one socket per port), learns which
// MAC is behind which port, and forwards every frame after a delay with jitter, sending some at
// once (reordering them before the delayed ones) and dropping some, as
// `tc qdisc ... netem delay D J reorder R loss L` does on each link.
// Frames keep their offload header (PACKET_VNET_HDR): TCP's large segments and partial
// checksums cross unchanged, as through a bridge.
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// struct virtio_net_hdr, which PACKET_VNET_HDR puts before each frame (its header does not
// compile as C++: a member is named `class`).
constexpr size_t kVnetHdrBytes = 10;

struct Impairment {
  double delay_ms = 5, jitter_ms = 2, reorder = 0.25, loss = 0.01;
};

struct Pending {
  Clock::time_point due;
  uint64_t order;  // equal due times leave in arrival order
  size_t port;
  std::shared_ptr<std::vector<uint8_t>> frame;  // virtio_net_hdr, then the Ethernet frame
  bool operator>(const Pending& o) const { return due != o.due ? due > o.due : order > o.order; }
};

volatile sig_atomic_t stop = 0;

int open_port(const std::string& name) {
  const int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_ALL));
  const int on = 1;
  sockaddr_ll addr = {};
  addr.sll_family = AF_PACKET;
  addr.sll_protocol = htons(ETH_P_ALL);
  addr.sll_ifindex = static_cast<int>(if_nametoindex(name.c_str()));
  if (fd < 0 || addr.sll_ifindex == 0 ||
      setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &on, sizeof(on)) != 0 ||
      bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    std::fprintf(stderr, "impair_hub: port %s: %s\n", name.c_str(), std::strerror(errno));
    std::exit(1);
  }
  return fd;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(item);
  return out;
}

class Hub {
 public:
  Hub(const std::vector<std::string>& ports, const Impairment& imp, unsigned seed)
      : imp_(imp), rng_(seed) {
    for (const std::string& p : ports) fds_.push_back(open_port(p));
  }

  void run(Clock::time_point until) {
    std::vector<pollfd> pfds;
    for (int fd : fds_) pfds.push_back({fd, POLLIN, 0});
    while (!stop && Clock::now() < until) {
      int wait_ms = 100;
      if (!queue_.empty()) {
        auto left = std::chrono::ceil<std::chrono::milliseconds>(queue_.top().due - Clock::now());
        wait_ms = static_cast<int>(std::max<long long>(0, std::min<long long>(left.count(), 100)));
      }
      if (poll(pfds.data(), pfds.size(), wait_ms) > 0) {
        for (size_t i = 0; i < pfds.size(); ++i) {
          if (pfds[i].revents & POLLIN) receive(i);
        }
      }
      send_due();
    }
  }

 private:
  void receive(size_t in) {
    for (int burst = 0; burst < 64; ++burst) {
      auto frame = std::make_shared<std::vector<uint8_t>>(kVnetHdrBytes + 65536 + 64);
      sockaddr_ll from = {};
      socklen_t len = sizeof(from);
      const ssize_t n = recvfrom(fds_[in], frame->data(), frame->size(), 0,
                                 reinterpret_cast<sockaddr*>(&from), &len);
      if (n <= 0) return;
      // Our own transmissions show on the port too.
      if (from.sll_pkttype == PACKET_OUTGOING) continue;
      const size_t eth = kVnetHdrBytes;
      if (static_cast<size_t>(n) < eth + ETH_HLEN) continue;
      frame->resize(static_cast<size_t>(n));
      const uint8_t* dst = frame->data() + eth;
      macs_[mac_key(dst + ETH_ALEN)] = in;
      auto known = macs_.find(mac_key(dst));
      for (size_t out = 0; out < fds_.size(); ++out) {
        if (out == in || (known != macs_.end() && known->second != out)) continue;
        forward(out, frame);
      }
    }
  }

  void forward(size_t out, const std::shared_ptr<std::vector<uint8_t>>& frame) {
    std::uniform_real_distribution<double> u(0, 1);
    if (u(rng_) < imp_.loss) return;
    double delay_ms = 0;
    if (u(rng_) >= imp_.reorder) {
      delay_ms = std::max(0.0, imp_.delay_ms + (2 * u(rng_) - 1) * imp_.jitter_ms);
    }
    const auto due = Clock::now() + std::chrono::microseconds(static_cast<long>(delay_ms * 1000));
    queue_.push(Pending{due, order_++, out, frame});
  }

  void send_due() {
    const auto now = Clock::now();
    while (!queue_.empty() && queue_.top().due <= now) {
      const Pending& p = queue_.top();
      // A port whose link is down refuses: the frame is lost, as on a cut cable.
      (void)!send(fds_[p.port], p.frame->data(), p.frame->size(), MSG_DONTWAIT);
      queue_.pop();
    }
  }

  static uint64_t mac_key(const uint8_t* mac) {
    uint64_t k = 0;
    std::memcpy(&k, mac, ETH_ALEN);
    return k;
  }

  Impairment imp_;
  std::mt19937_64 rng_;
  std::vector<int> fds_;
  std::map<uint64_t, size_t> macs_;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<Pending>> queue_;
  uint64_t order_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> ports;
  Impairment imp;
  unsigned seed = 1;
  long max_seconds = 600;
  std::string ready;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], v = argv[i + 1];
    if (flag == "--ports")
      ports = split(v);
    else if (flag == "--delay-ms")
      imp.delay_ms = std::atof(v.c_str());
    else if (flag == "--jitter-ms")
      imp.jitter_ms = std::atof(v.c_str());
    else if (flag == "--reorder-pct")
      imp.reorder = std::atof(v.c_str()) / 100;
    else if (flag == "--loss-pct")
      imp.loss = std::atof(v.c_str()) / 100;
    else if (flag == "--seed")
      seed = static_cast<unsigned>(std::atol(v.c_str()));
    else if (flag == "--max-seconds")
      max_seconds = std::atol(v.c_str());
    else if (flag == "--ready-file")
      ready = v;
  }
  if (ports.size() < 2) {
    std::fprintf(stderr,
                 "usage: efacoll_impair_hub --ports P1,P2[,...] [--delay-ms D] [--jitter-ms J]\n"
                 "  [--reorder-pct R] [--loss-pct L] [--seed S] [--max-seconds T] "
                 "[--ready-file PATH]\n");
    return 2;
  }
  // Never outlives the test that started it.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  signal(SIGTERM, [](int) { stop = 1; });
  signal(SIGINT, [](int) { stop = 1; });
  Hub hub(ports, imp, seed);
  if (!ready.empty()) std::ofstream(ready) << getpid() << "\n";
  hub.run(Clock::now() + std::chrono::seconds(max_seconds));
  return 0;
}
