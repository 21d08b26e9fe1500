// Builds a sysfs-shaped tree in a temporary directory (real directories and symlinks, as the
// kernel lays them out), so topology detection runs on p4d and p5 layouts without the hardware.
#pragma once
#include <string>
#include <vector>

namespace efacoll {
namespace testing {

class SysfsFixture {
 public:
  explicit SysfsFixture(const std::string& product);
  ~SysfsFixture();
  SysfsFixture(const SysfsFixture&) = delete;
  SysfsFixture& operator=(const SysfsFixture&) = delete;

  // path: "pci0000:44/0000:44:00.0/.../0000:53:00.0" (root complex first, device last).
  void add_device(const std::string& path, unsigned vendor, unsigned device, unsigned pci_class,
                  int numa, const std::string& ib_name = "");
  void add_gpu(const std::string& path, int numa) {
    add_device(path, 0x10de, 0x2330, 0x030200, numa);
  }
  void add_efa(const std::string& path, int numa, const std::string& ib_name) {
    add_device(path, 0x1d0f, 0xefa1, 0x020000, numa, ib_name);
  }
  // A line of <root>/efacoll-nvlink.
  void nvlink(const std::string& bdf, const std::string& peers);
  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

// The layouts of docs/efa-facts (p4d.24xlarge, p5.48xlarge) and a PCIe-only two-socket box.
void build_p4d(SysfsFixture* f);
void build_p5(SysfsFixture* f);
void build_pcie_box(SysfsFixture* f);

}  // namespace testing
}  // namespace efacoll
