#include "topo_fixture.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

namespace efacoll {
namespace testing {
namespace {

void must(int rc, const std::string& what) {
  if (rc != 0) std::perror(what.c_str());
}

void write(const std::string& file, const std::string& text) {
  std::ofstream(file) << text << "\n";
}

std::string hex(unsigned v, int width) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%0*x", width, v);
  return buf;
}

std::string bdf(unsigned bus, unsigned dev, unsigned fn = 0) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0000:%02x:%02x.%x", bus, dev, fn);
  return buf;
}

}  // namespace

SysfsFixture::SysfsFixture(const std::string& product) {
  char tmpl[] = "/tmp/efacoll-sysfs-XXXXXX";
  root_ = mkdtemp(tmpl);
  must(std::system(("mkdir -p " + root_ + "/bus/pci/devices " + root_ + "/class/infiniband " +
                    root_ + "/devices/virtual/dmi/id")
                       .c_str()),
       "mkdir");
  write(root_ + "/devices/virtual/dmi/id/product_name", product);
}

SysfsFixture::~SysfsFixture() { must(std::system(("rm -rf " + root_).c_str()), "rm"); }

void SysfsFixture::add_device(const std::string& path, unsigned vendor, unsigned device,
                              unsigned pci_class, int numa, const std::string& ib_name) {
  const std::string dir = root_ + "/devices/" + path;
  must(std::system(("mkdir -p " + dir).c_str()), "mkdir");
  write(dir + "/vendor", hex(vendor, 4));
  write(dir + "/device", hex(device, 4));
  write(dir + "/class", hex(pci_class, 6));
  write(dir + "/numa_node", std::to_string(numa));
  const std::string name = path.substr(path.rfind('/') + 1);
  must(symlink(dir.c_str(), (root_ + "/bus/pci/devices/" + name).c_str()), "symlink");
  if (!ib_name.empty()) {
    const std::string ib = root_ + "/class/infiniband/" + ib_name;
    must(std::system(("mkdir -p " + ib).c_str()), "mkdir");
    must(symlink(dir.c_str(), (ib + "/device").c_str()), "symlink");
  }
}

void SysfsFixture::nvlink(const std::string& device_bdf, const std::string& peers) {
  std::ofstream(root_ + "/efacoll-nvlink", std::ios::app) << device_bdf << ": " << peers << "\n";
}

// p4d.24xlarge: four root buses, each with two A100s and one EFA; no PCIe switch visible.
void build_p4d(SysfsFixture* f) {
  const unsigned buses[] = {0x10, 0x20, 0x90, 0xa0};
  for (int i = 0; i < 4; ++i) {
    const unsigned b = buses[i];
    const int numa = i < 2 ? 0 : 1;
    const std::string root = "pci0000:" + bdf(b, 0).substr(5, 2);
    for (unsigned slot : {0x1cu, 0x1du}) {
      f->add_device(root + "/" + bdf(b, slot), 0x10de, 0x20b0, 0x030200, numa);
      f->nvlink(bdf(b, slot), "nvswitch nvswitch nvswitch");
    }
    f->add_efa(root + "/" + bdf(b, 0x1b), numa, "rdmap" + std::to_string(b) + "s27");
  }
  // Not GPUs, not RDMA NICs: the ENA and an NVMe drive on bus 0x10.
  f->add_device("pci0000:10/" + bdf(0x10, 0x00), 0x1d0f, 0xec20, 0x020000, 0);
  f->add_device("pci0000:10/" + bdf(0x10, 0x1e), 0x1d0f, 0xcd01, 0x010802, 0);
}

// p5.48xlarge: per GPU a host bridge, a switch, and four EFAs on the switch's ports next to it.
void build_p5(SysfsFixture* f) {
  for (unsigned k = 0; k < 8; ++k) {
    const unsigned b = 0x44 + 0x11 * k;
    const int numa = k < 4 ? 0 : 1;
    const std::string sw =
        "pci0000:" + bdf(b, 0).substr(5, 2) + "/" + bdf(b, 0) + "/" + bdf(b + 1, 0);
    f->add_gpu(sw + "/" + bdf(b + 2, 1, 4) + "/" + bdf(b + 0x0f, 0), numa);
    f->nvlink(bdf(b + 0x0f, 0), "nvswitch nvswitch");
    for (unsigned j = 0; j < 4; ++j) {
      f->add_efa(sw + "/" + bdf(b + 2, 1, j) + "/" + bdf(b + 0x0b + j, 0), numa,
                 "rdmap" + std::to_string(b + 0x0b + j) + "s0");
    }
  }
}

// Two GPUs on different sockets, one InfiniBand NIC on socket 0, no NVLink.
void build_pcie_box(SysfsFixture* f) {
  f->add_gpu("pci0000:3a/" + bdf(0x3a, 0) + "/" + bdf(0x3b, 0), 0);
  f->add_gpu("pci0000:d7/" + bdf(0xd7, 0) + "/" + bdf(0xd8, 0), 1);
  f->add_device("pci0000:17/" + bdf(0x17, 0) + "/" + bdf(0x18, 0), 0x15b3, 0x101b, 0x020700, 0,
                "mlx5_0");
}

}  // namespace testing
}  // namespace efacoll
