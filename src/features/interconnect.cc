#include "features/interconnect.h"

#include <cctype>
#include <charconv>
#include <cstdint>
#include <string>
#include <vector>

namespace gpucast {
namespace {

constexpr int kMaxGpus = 65536;
constexpr int kMaxNics = 64;
constexpr int kMaxNvlinkLinks = 18;

std::string Lower(const std::string& s) {
  std::string out;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Parses the digits of `s` from `*pos`: a positive integer of at most 6 digits, or -1.
int Number(const std::string& s, size_t* pos) {
  size_t start = *pos;
  int64_t v = 0;
  while (*pos < s.size() && std::isdigit(static_cast<unsigned char>(s[*pos])) && *pos - start < 6)
    v = v * 10 + (s[(*pos)++] - '0');
  if (*pos == start || (*pos < s.size() && std::isdigit(static_cast<unsigned char>(s[*pos])))) return -1;
  return static_cast<int>(v);
}

std::string Num(double v) {
  std::string s = std::to_string(v);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

Link PcieLink(int gen, int lanes, const std::string& from) {
  return {"pcie" + std::to_string(gen) + "x" + std::to_string(lanes), "pcie", lanes * PcieLaneBytesPerSecond(gen),
          kNcclRingPcieStepS, from};
}

Link NvlinkLink(int gen, int links, double bandwidth, const std::string& from) {
  return {"nvlink" + std::to_string(gen) + (links > 0 ? "x" + std::to_string(links) : ""), "nvlink", bandwidth,
          kNcclRingNvlinkStepS, from};
}

Link NetworkLink(const std::string& kind, double gbps, int nics, const std::string& from) {
  std::string prefix = kind == "infiniband" ? "ib" : "eth";
  return {prefix + Num(gbps) + (nics > 1 ? "x" + std::to_string(nics) : ""), kind, gbps * 1e9 / 8 * nics,
          kNcclRingNetStepS, from};
}

// The names errors use (InputWording).
struct Words {
  InputWording wording;
  std::string operator()(const std::string& name) const { return InputName(wording, name); }
};

Status TokenError(const Words& w, const std::string& token, const std::string& why) {
  return Status::Error(w("interconnect") + " '" + token + "': " + why);
}

// The GPU's PCIe host link, or an error when the table does not state it.
Result<Link> HostLink(const Words& w, const GpuSpec& gpu, const std::string& token) {
  if (gpu.pcie_gen == 0 || gpu.pcie_lanes == 0)
    return Status::Error((token.empty() ? std::string("interconnect") : w("interconnect") + " '" + token + "'") +
                         ": the GPU table does not state the PCIe link of '" + gpu.name + "'; give one, e.g. " +
                         w("interconnect") + " pcie5x16");
  return PcieLink(gpu.pcie_gen, gpu.pcie_lanes, "GPU table");
}

// gpu null: the token's syntax and ranges only (what needs the GPU passes, with a
// placeholder link).
Result<Link> ParseIntra(const Words& w, const GpuSpec* gpu, const std::string& t) {
  size_t pos;
  if (t.rfind("pcie", 0) == 0) {
    if (t == "pcie") return gpu ? HostLink(w, *gpu, t) : Link{};
    pos = 4;
    int gen = Number(t, &pos);
    if (gen < 3 || gen > 5 || pos >= t.size() || t[pos] != 'x')
      return TokenError(w, t, "want pcie<gen>x<lanes> with gen 3, 4 or 5 (e.g. pcie4x16)");
    ++pos;
    int lanes = Number(t, &pos);
    if (pos != t.size() || !(lanes == 1 || lanes == 2 || lanes == 4 || lanes == 8 || lanes == 16))
      return TokenError(w, t, "PCIe lanes must be 1, 2, 4, 8 or 16");
    return PcieLink(gen, lanes, "--interconnect");
  }
  // nvlink[<gen>[x<links>]]
  if (t == "nvlink") {
    if (!gpu) return Link{};
    if (gpu->nvlink_gen == 0) return TokenError(w, t, "GPU '" + gpu->name + "' has no NVLink");
    return NvlinkLink(gpu->nvlink_gen, gpu->nvlink_links, gpu->nvlink_bandwidth, "GPU table");
  }
  pos = 6;
  int gen = Number(t, &pos);
  if (gen < 1 || gen > 5) return TokenError(w, t, "want nvlink, nvlink<gen> or nvlink<gen>x<links> (gen 1-5)");
  if (pos == t.size()) {
    if (!gpu) return Link{};
    if (gpu->nvlink_gen == 0)
      return TokenError(w, t, "GPU '" + gpu->name + "' has no NVLink; say how many links: nvlink" +
                               std::to_string(gen) + "x<links>");
    if (gpu->nvlink_gen != gen)
      return TokenError(w, t, "GPU '" + gpu->name + "' has NVLink " + std::to_string(gpu->nvlink_gen) + ", not " +
                               std::to_string(gen));
    return NvlinkLink(gen, gpu->nvlink_links, gpu->nvlink_bandwidth, "GPU table");
  }
  if (t[pos] != 'x') return TokenError(w, t, "want nvlink<gen>x<links>, e.g. nvlink3x12");
  ++pos;
  int links = Number(t, &pos);
  if (pos != t.size() || links < 1 || links > kMaxNvlinkLinks)
    return TokenError(w, t, "NVLink links must be 1-" + std::to_string(kMaxNvlinkLinks));
  return NvlinkLink(gen, links, links * NvlinkLinkBytesPerSecond(gen), "--interconnect");
}

// tcp[<Gb/s>]: the achieved rate of NCCL's socket transport, a decimal number.
Result<Link> ParseTcp(const Words& w, const std::string& t) {
  double gbps = kNcclSocketGbps;
  if (t.size() > 3) {
    const char* end = t.data() + t.size();
    auto [stop, ec] = std::from_chars(t.data() + 3, end, gbps, std::chars_format::fixed);
    if (ec != std::errc() || stop != end || !(gbps >= 0.1 && gbps <= 100000))
      return TokenError(w, t, "want tcp or tcp<achieved Gb/s> (0.1-100000), e.g. tcp4.5");
  }
  return TcpLink(gbps, "--interconnect");
}

Result<Link> ParseInter(const Words& w, const std::string& t) {
  if (t.rfind("tcp", 0) == 0) return ParseTcp(w, t);
  bool ib = t.rfind("ib", 0) == 0;
  size_t pos = ib ? 2 : 3;
  int gbps = Number(t, &pos);
  if (gbps < 1 || gbps > 100000) return TokenError(w, t, "want ib<Gb/s> or eth<Gb/s> (1-100000), e.g. ib200");
  int nics = 1;
  if (pos < t.size()) {
    if (t[pos] != 'x') return TokenError(w, t, "want ib<Gb/s>x<nics>, e.g. ib200x8");
    ++pos;
    nics = Number(t, &pos);
    if (pos != t.size() || nics < 1 || nics > kMaxNics)
      return TokenError(w, t, "network links per node must be 1-" + std::to_string(kMaxNics));
  }
  return NetworkLink(ib ? "infiniband" : "ethernet", gbps, nics, "--interconnect");
}

}  // namespace

Link TcpLink(double gbps, const std::string& from) {
  return {"tcp" + Num(gbps), "tcp", gbps * 1e9 / 8, kNcclRingNetStepS, from};
}

double PcieLaneBytesPerSecond(int gen) {
  double gts = gen == 3 ? 8 : gen == 4 ? 16 : gen == 5 ? 32 : 0;
  return gts * 1e9 * 128.0 / 130.0 / 8;
}

double NvlinkLinkBytesPerSecond(int gen) {
  if (gen == 1) return 20e9;
  if (gen >= 2 && gen <= 4) return 25e9;
  if (gen == 5) return 50e9;
  return 0;
}

std::string InputName(InputWording wording, const std::string& name) {
  return wording == InputWording::kApi ? name : "--" + name;
}

namespace {

// ResolveInterconnect; gpu null: only what needs no GPU is checked (CheckInterconnectSpec), and
// the links returned are placeholders.
Result<Interconnect> Resolve(const GpuSpec* gpu, int gpus, int nodes, const std::string& spec,
                             InputWording wording) {
  const Words w{wording};
  if (gpus < 1 || gpus > kMaxGpus)
    return Status::Error(w("gpus") + " " + std::to_string(gpus) + ": want 1-" + std::to_string(kMaxGpus));
  if (nodes < 1 || nodes > gpus)
    return Status::Error(w("nodes") + " " + std::to_string(nodes) + ": want 1-" + std::to_string(gpus) + " (" +
                         w("gpus") + " " + std::to_string(gpus) + ")");
  if (gpus % nodes != 0)
    return Status::Error(w("gpus") + " " + std::to_string(gpus) + " " + w("nodes") + " " + std::to_string(nodes) +
                         ": GPUs must divide evenly over nodes");
  Interconnect ic;
  ic.gpus = gpus;
  ic.nodes = nodes;
  ic.gpus_per_node = gpus / nodes;
  bool have_intra = false, have_inter = false;
  std::string s = Lower(spec);
  std::vector<std::string> tokens;
  for (size_t start = 0; start <= s.size();) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    std::string t = s.substr(start, comma - start);
    if (!t.empty()) tokens.push_back(t);
    else if (!s.empty()) return Status::Error(w("interconnect") + " '" + spec + "': empty token");
    start = comma + 1;
  }
  for (const std::string& t : tokens) {
    if (t.rfind("pcie", 0) == 0 || t.rfind("nvlink", 0) == 0) {
      if (have_intra) return TokenError(w, t, "a second link inside the node (one of pcie..., nvlink...)");
      ASSIGN_OR_RETURN(ic.intra, ParseIntra(w, gpu, t));
      have_intra = true;
    } else if (t.rfind("ib", 0) == 0 || t.rfind("eth", 0) == 0 || t.rfind("tcp", 0) == 0) {
      if (have_inter) return TokenError(w, t, "a second network (one of ib..., eth..., tcp...)");
      ASSIGN_OR_RETURN(ic.inter, ParseInter(w, t));
      have_inter = true;
    } else {
      return TokenError(w, t, "unknown link (want pcie, pcie<gen>x<lanes>, nvlink, nvlink<gen>[x<links>], "
                           "ib<Gb/s>[x<nics>], eth<Gb/s>[x<nics>], tcp[<Gb/s>])");
    }
  }
  if (!have_intra && gpu) {
    if (gpu->nvlink_gen > 0 && !gpu->nvlink_bridge) {
      ic.intra = NvlinkLink(gpu->nvlink_gen, gpu->nvlink_links, gpu->nvlink_bandwidth, "GPU table");
    } else {
      ASSIGN_OR_RETURN(ic.intra, HostLink(w, *gpu, ""));
    }
  }
  // A bridge joins two cards: a ring of more GPUs in a node crosses PCIe.
  if (gpu && ic.intra.kind == "nvlink" && gpu->nvlink_bridge && ic.intra.from == "GPU table" &&
      ic.gpus_per_node > 2)
    return Status::Error(w("interconnect") + " '" + ic.intra.name + "': an NVLink bridge joins 2 '" + gpu->name +
                         "' cards, not " + std::to_string(ic.gpus_per_node) + " (use pcie, or nvlink<gen>x<links> "
                         "for a switch)");
  if (nodes > 1 && !have_inter) ic.inter = NetworkLink("ethernet", kDefaultNetworkGbps, 1, "default");
  if (nodes == 1 && have_inter)
    return Status::Error(w("interconnect") + " '" + ic.inter.name + "': a network link needs " + w("nodes") +
                         " > 1");
  return ic;
}

}  // namespace

Result<Interconnect> ResolveInterconnect(const GpuSpec& gpu, int gpus, int nodes, const std::string& spec,
                                         InputWording wording) {
  return Resolve(&gpu, gpus, nodes, spec, wording);
}

Status CheckInterconnectSpec(int gpus, int nodes, const std::string& spec, InputWording wording) {
  return Resolve(nullptr, gpus, nodes, spec, wording).status();
}

}  // namespace gpucast
