#include "features/interconnect.h"

#include <string>

#include <gtest/gtest.h>

namespace gpucast {
namespace {

const GpuSpec& Gpu(const char* name) {
  const GpuSpec* s = FindGpuSpec(name);
  EXPECT_NE(s, nullptr) << name;
  return *s;
}

TEST(Interconnect, LinkRatesByHand) {
  // PCIe 3.0: 8 GT/s x 128/130 / 8 bits = 0.985 GB/s a lane; x16 = 15.75 GB/s each way.
  EXPECT_NEAR(16 * PcieLaneBytesPerSecond(3), 15.754e9, 0.001e9);
  EXPECT_NEAR(16 * PcieLaneBytesPerSecond(4), 31.508e9, 0.001e9);
  EXPECT_NEAR(16 * PcieLaneBytesPerSecond(5), 63.015e9, 0.001e9);
  // NVLink per link and direction: V100 6 x 25 = 150 (300 both ways), A100 12 x 25 = 300 (600), H100 18 x 25.
  EXPECT_EQ(6 * NvlinkLinkBytesPerSecond(2), 150e9);
  EXPECT_EQ(12 * NvlinkLinkBytesPerSecond(3), 300e9);
  EXPECT_EQ(18 * NvlinkLinkBytesPerSecond(4), 450e9);
  EXPECT_EQ(4 * NvlinkLinkBytesPerSecond(1), 80e9);
}

TEST(Interconnect, DefaultsFromTheGpuTable) {
  // SXM: the board's NVLink fabric.
  Result<Interconnect> a = ResolveInterconnect(Gpu("A100-80GB"), 8, 1, "");
  ASSERT_TRUE(a.ok()) << a.message();
  EXPECT_EQ(a->intra.name, "nvlink3x12");
  EXPECT_EQ(a->intra.bandwidth, 300e9);
  EXPECT_EQ(a->intra.step_latency_s, kNcclRingNvlinkStepS);
  EXPECT_EQ(a->intra.from, "GPU table");
  EXPECT_EQ(a->inter.kind, "");
  EXPECT_EQ(a->gpus_per_node, 8);
  // A card: its PCIe host link, even when an NVLink bridge exists (an accessory for 2 cards).
  Result<Interconnect> r = ResolveInterconnect(Gpu("RTX3090"), 4, 1, "");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->intra.name, "pcie4x16");
  EXPECT_NEAR(r->intra.bandwidth, 31.508e9, 0.001e9);
  EXPECT_EQ(r->intra.step_latency_s, kNcclRingPcieStepS);
  // Several nodes: the default network, said to be one.
  Result<Interconnect> n = ResolveInterconnect(Gpu("V100-32GB"), 16, 2, "");
  ASSERT_TRUE(n.ok()) << n.message();
  EXPECT_EQ(n->gpus_per_node, 8);
  EXPECT_EQ(n->inter.name, "eth100");
  EXPECT_EQ(n->inter.bandwidth, 12.5e9);
  EXPECT_EQ(n->inter.from, "default");
  EXPECT_EQ(n->inter.step_latency_s, kNcclRingNetStepS);
}

TEST(Interconnect, Overrides) {
  Result<Interconnect> b = ResolveInterconnect(Gpu("RTX 3090"), 2, 1, "nvlink");
  ASSERT_TRUE(b.ok()) << b.message();
  EXPECT_EQ(b->intra.name, "nvlink3");
  EXPECT_EQ(b->intra.bandwidth, 56.25e9);  // 112.5 GB/s both ways
  Result<Interconnect> x = ResolveInterconnect(Gpu("RTX4090"), 8, 2, " NVLink3x4 , IB200x8 ");
  ASSERT_TRUE(x.ok()) << x.message();
  EXPECT_EQ(x->intra.name, "nvlink3x4");
  EXPECT_EQ(x->intra.bandwidth, 100e9);
  EXPECT_EQ(x->inter.name, "ib200x8");
  EXPECT_EQ(x->inter.bandwidth, 200e9);  // 8 x 200 Gb/s
  EXPECT_EQ(x->inter.kind, "infiniband");
  Result<Interconnect> p = ResolveInterconnect(Gpu("H100"), 4, 1, "pcie5x16");
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_EQ(p->intra.kind, "pcie");
  Result<Interconnect> h = ResolveInterconnect(Gpu("T4"), 4, 1, "pcie");
  ASSERT_TRUE(h.ok()) << h.message();
  EXPECT_EQ(h->intra.name, "pcie3x16");
  Result<Interconnect> e = ResolveInterconnect(Gpu("A10"), 2, 2, "eth25");
  ASSERT_TRUE(e.ok()) << e.message();
  EXPECT_EQ(e->inter.bandwidth, 25e9 / 8);
  EXPECT_EQ(e->gpus_per_node, 1);
}

TEST(Interconnect, TcpIsTheSocketTransportsAchievedRate) {
  // tcp: NCCL over sockets at the fitted achieved rate per node; tcp<Gb/s>: a stated one (decimals allowed).
  Result<Interconnect> t = ResolveInterconnect(Gpu("T4"), 8, 2, "tcp");
  ASSERT_TRUE(t.ok()) << t.message();
  EXPECT_EQ(t->inter.kind, "tcp");
  EXPECT_DOUBLE_EQ(t->inter.bandwidth, kNcclSocketGbps * 1e9 / 8);
  EXPECT_EQ(t->intra.name, "pcie3x16");  // inside a node still the GPU table's link
  Result<Interconnect> s = ResolveInterconnect(Gpu("T4"), 8, 2, "pcie,tcp4.5");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(s->inter.name, "tcp4.5");
  EXPECT_DOUBLE_EQ(s->inter.bandwidth, 4.5e9 / 8);  // 4.5 Gb/s = 562.5 MB/s
  EXPECT_EQ(s->inter.step_latency_s, kNcclRingNetStepS);
  auto msg = [](const char* spec) { return ResolveInterconnect(Gpu("T4"), 8, 2, spec).message(); };
  EXPECT_EQ(msg("tcp0"), "--interconnect 'tcp0': want tcp or tcp<achieved Gb/s> (0.1-100000), e.g. tcp4.5");
  EXPECT_EQ(msg("tcp4.5x2"), "--interconnect 'tcp4.5x2': want tcp or tcp<achieved Gb/s> (0.1-100000), e.g. tcp4.5");
  for (const char* bad : {"tcpinf", "tcpnan", "tcp-1", "tcp1e3", "tcp4.5.1"})
    EXPECT_EQ(msg(bad), std::string("--interconnect '") + bad + "': want tcp or tcp<achieved Gb/s> (0.1-100000), e.g. tcp4.5");
  EXPECT_EQ(msg("eth50,tcp"), "--interconnect 'tcp': a second network (one of ib..., eth..., tcp...)");
}

TEST(Interconnect, TcpLinkIsWhatTheTokenGives) {
  // A rate as a number (evaluate --steps' fitted one) gives the link the token tcp<rate> gives.
  for (const char* spec : {"tcp2.5", "tcp4.3117", "tcp0.1", "tcp100000"}) {
    Result<Interconnect> t = ResolveInterconnect(Gpu("T4"), 8, 2, spec);
    ASSERT_TRUE(t.ok()) << t.message();
    const Link l = TcpLink(std::stod(spec + 3), "fitted");
    EXPECT_EQ(l.name, t->inter.name) << spec;
    EXPECT_EQ(l.kind, t->inter.kind) << spec;
    EXPECT_EQ(l.bandwidth, t->inter.bandwidth) << spec;
    EXPECT_EQ(l.step_latency_s, t->inter.step_latency_s) << spec;
    EXPECT_EQ(l.from, "fitted");
  }
  EXPECT_EQ(TcpLink(2.5, "x").bandwidth, 312.5e6);  // 2.5 Gb/s = 312.5 MB/s
}

TEST(Interconnect, ErrorsNameTheTokenOrTheCount) {
  auto msg = [](const char* gpu, int gpus, int nodes, const char* spec) {
    return ResolveInterconnect(Gpu(gpu), gpus, nodes, spec).message();
  };
  EXPECT_EQ(msg("A100-80GB", 8, 1, "nvlink2"), "--interconnect 'nvlink2': GPU 'A100-80GB' has NVLink 3, not 2");
  EXPECT_EQ(msg("RTX4090", 2, 1, "nvlink"), "--interconnect 'nvlink': GPU 'RTX4090' has no NVLink");
  EXPECT_EQ(msg("RTX4090", 2, 1, "nvlink4"),
            "--interconnect 'nvlink4': GPU 'RTX4090' has no NVLink; say how many links: nvlink4x<links>");
  EXPECT_EQ(msg("RTX3090", 4, 1, "nvlink"),
            "--interconnect 'nvlink3': an NVLink bridge joins 2 'RTX3090' cards, not 4 (use pcie, or "
            "nvlink<gen>x<links> for a switch)");
  EXPECT_EQ(msg("RTX3090", 6, 4, ""), "--gpus 6 --nodes 4: GPUs must divide evenly over nodes");
  EXPECT_EQ(msg("RTX3090", 2, 0, ""), "--nodes 0: want 1-2 (--gpus 2)");
  EXPECT_EQ(msg("RTX3090", 0, 1, ""), "--gpus 0: want 1-65536");
  EXPECT_EQ(msg("RTX3090", 2, 1, "pcie4x3"), "--interconnect 'pcie4x3': PCIe lanes must be 1, 2, 4, 8 or 16");
  EXPECT_EQ(msg("RTX3090", 2, 1, "pcie9x16"),
            "--interconnect 'pcie9x16': want pcie<gen>x<lanes> with gen 3, 4 or 5 (e.g. pcie4x16)");
  EXPECT_EQ(msg("RTX3090", 2, 1, "pcie4x16,nvlink"),
            "--interconnect 'nvlink': a second link inside the node (one of pcie..., nvlink...)");
  EXPECT_EQ(msg("RTX3090", 2, 1, "ib200"), "--interconnect 'ib200': a network link needs --nodes > 1");
  EXPECT_EQ(msg("RTX3090", 4, 2, "ib0"), "--interconnect 'ib0': want ib<Gb/s> or eth<Gb/s> (1-100000), e.g. ib200");
  EXPECT_EQ(msg("RTX3090", 4, 2, "ib200x99"), "--interconnect 'ib200x99': network links per node must be 1-64");
  EXPECT_EQ(msg("RTX3090", 4, 2, "infinity"),
            "--interconnect 'infinity': unknown link (want pcie, pcie<gen>x<lanes>, nvlink, nvlink<gen>[x<links>], "
            "ib<Gb/s>[x<nics>], eth<Gb/s>[x<nics>], tcp[<Gb/s>])");
  EXPECT_EQ(msg("RTX3090", 4, 2, "pcie4x16,,ib100"), "--interconnect 'pcie4x16,,ib100': empty token");
  EXPECT_EQ(msg("B200", 2, 1, "pcie"),
            "--interconnect 'pcie': the GPU table does not state the PCIe link of 'B200'; give one, e.g. "
            "--interconnect pcie5x16");
  EXPECT_EQ(msg("RTX3090", 2, 1, "nvlink3x99"), "--interconnect 'nvlink3x99': NVLink links must be 1-18");
  EXPECT_EQ(msg("RTX3090", 2, 1, "pcie4x1600000000"),
            "--interconnect 'pcie4x1600000000': PCIe lanes must be 1, 2, 4, 8 or 16");
}

// CheckInterconnectSpec is ResolveInterconnect without a GPU: the same message
// for every error that needs no GPU, and no error where only the GPU decides.
TEST(Interconnect, CheckWithoutAGpuRefusesWhatNoGpuAccepts) {
  struct Case {
    const char* gpu;
    int gpus, nodes;
    const char* spec;
    bool needs_gpu;  // refused only because of this GPU
  };
  const Case cases[] = {{"A100-80GB", 8, 1, "nvlink2", true},     {"RTX4090", 2, 1, "nvlink", true},
                        {"RTX4090", 2, 1, "nvlink4", true},       {"RTX3090", 4, 1, "nvlink", true},
                        {"B200", 2, 1, "pcie", true},             {"RTX3090", 6, 4, "", false},
                        {"RTX3090", 2, 0, "", false},             {"RTX3090", 0, 1, "", false},
                        {"RTX3090", 2, 1, "pcie4x3", false},      {"RTX3090", 2, 1, "pcie9x16", false},
                        {"RTX3090", 2, 1, "pcie4x16,nvlink", false}, {"RTX3090", 2, 1, "ib200", false},
                        {"RTX3090", 4, 2, "ib0", false},          {"RTX3090", 4, 2, "ib200x99", false},
                        {"RTX3090", 4, 2, "infinity", false},     {"RTX3090", 4, 2, "pcie4x16,,ib100", false},
                        {"RTX3090", 2, 1, "nvlink3x99", false},   {"RTX3090", 2, 1, "nvlink9", false},
                        {"T4", 8, 2, "tcp0", false},              {"RTX3090", 4, 2, "eth50,tcp", false}};
  for (const Case& c : cases) {
    const auto full = ResolveInterconnect(Gpu(c.gpu), c.gpus, c.nodes, c.spec, InputWording::kApi);
    ASSERT_FALSE(full.ok()) << c.gpu << " " << c.spec;
    const Status check = CheckInterconnectSpec(c.gpus, c.nodes, c.spec, InputWording::kApi);
    if (c.needs_gpu) {
      EXPECT_TRUE(check.ok()) << c.gpu << " " << c.spec << ": " << check.message();
    } else {
      EXPECT_EQ(check.message(), full.message()) << c.gpu << " " << c.spec;
    }
  }
  // What every GPU resolves passes.
  for (const char* ok : {"", "pcie", "nvlink", "nvlink3", "pcie4x16,ib200", "nvlink4x18,eth100x2", "tcp", "tcp4.5"})
    EXPECT_TRUE(CheckInterconnectSpec(8, 2, ok).ok()) << ok;
  EXPECT_EQ(CheckInterconnectSpec(2, 1, "warp9").message(),
            "--interconnect 'warp9': unknown link (want pcie, pcie<gen>x<lanes>, nvlink, nvlink<gen>[x<links>], "
            "ib<Gb/s>[x<nics>], eth<Gb/s>[x<nics>], tcp[<Gb/s>])");
}

TEST(Interconnect, ApiWordingNamesTheFieldsNotTheFlags) {
  // The service's errors name its JSON fields and query parameters ("interconnect", "gpus",
  // "nodes"): the command line's message without its "--", for every kind of error.
  struct Bad {
    const char* gpu;
    int gpus, nodes;
    const char* spec;
  };
  const Bad bad[] = {{"A100-80GB", 8, 1, "nvlink2"}, {"RTX4090", 2, 1, "nvlink"},  {"RTX4090", 2, 1, "nvlink4"},
                     {"RTX3090", 4, 1, "nvlink"},    {"RTX3090", 6, 4, ""},        {"RTX3090", 2, 0, ""},
                     {"RTX3090", 0, 1, ""},          {"RTX3090", 2, 1, "pcie4x3"}, {"RTX3090", 2, 1, "pcie4x16,nvlink"},
                     {"RTX3090", 2, 1, "ib200"},     {"RTX3090", 4, 2, "ib0"},     {"RTX3090", 4, 2, "infinity"},
                     {"RTX3090", 4, 2, "pcie4x16,,ib100"}, {"B200", 2, 1, "pcie"}, {"T4", 8, 2, "tcp0"},
                     {"RTX3090", 4, 2, "eth50,tcp"}};
  for (const Bad& b : bad) {
    const std::string cli = ResolveInterconnect(Gpu(b.gpu), b.gpus, b.nodes, b.spec).message();
    const std::string api = ResolveInterconnect(Gpu(b.gpu), b.gpus, b.nodes, b.spec, InputWording::kApi).message();
    ASSERT_NE(cli.find("--"), std::string::npos) << cli;
    std::string want = cli;
    for (size_t p; (p = want.find("--")) != std::string::npos;) want.erase(p, 2);
    EXPECT_EQ(api, want) << b.gpu << " " << b.spec;
  }
  EXPECT_EQ(ResolveInterconnect(Gpu("RTX3090"), 2, 1, "ib200", InputWording::kApi).message(),
            "interconnect 'ib200': a network link needs nodes > 1");
  EXPECT_EQ(ResolveInterconnect(Gpu("B200"), 2, 1, "pcie", InputWording::kApi).message(),
            "interconnect 'pcie': the GPU table does not state the PCIe link of 'B200'; give one, e.g. "
            "interconnect pcie5x16");
  EXPECT_EQ(InputName(InputWording::kCli, "gpus"), "--gpus");
  EXPECT_EQ(InputName(InputWording::kApi, "gpus"), "gpus");
}

}  // namespace
}  // namespace gpucast
