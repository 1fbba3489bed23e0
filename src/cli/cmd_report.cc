// gpucast report: a self-contained HTML page comparing simulation runs.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "sim/report.h"

namespace gpucast::cli {
namespace {

struct ReportFlags {
  std::vector<std::string> dirs;
  std::string out;
};

int RunReport(const ReportFlags& f) {
  std::vector<sim::RunData> runs;
  for (const std::string& d : f.dirs) {
    namespace fs = std::filesystem;
    std::vector<std::string> expanded;
    if (fs::exists(d + "/summary.json")) {
      expanded.push_back(d);
    } else if (fs::is_directory(d)) {
      // A `simulate --policy all` directory: one run per subdirectory, sorted.
      for (const auto& e : fs::directory_iterator(d))
        if (fs::exists(e.path() / "summary.json")) expanded.push_back(e.path().string());
      std::sort(expanded.begin(), expanded.end());
    }
    if (expanded.empty()) return Fail("report", d + ": no summary.json (not a simulate --out directory)");
    for (const std::string& x : expanded) {
      auto r = sim::LoadRun(x);
      if (!r.ok()) return Fail("report", r.message());
      runs.push_back(std::move(r).value());
    }
  }
  std::ofstream out(f.out);
  if (!out) return Fail("report", f.out + ": cannot write");
  out << sim::RenderReport(runs);
  if (!out) return Fail("report", f.out + ": write failed");
  std::printf("wrote %s (%zu runs)\n", f.out.c_str(), runs.size());
  return 0;
}

}  // namespace

CLI::App* AddReport(CLI::App& root, int* exit_code) {
  auto flags = std::make_shared<ReportFlags>();
  CLI::App* sub = root.add_subcommand("report", "HTML comparison of simulation runs (utilization, JCT CDFs, summary)");
  sub->add_option("dirs", flags->dirs, "simulate --out directories (or their parent with --policy all)")->required();
  sub->add_option("--out,-o", flags->out, "HTML file to write")->required();
  sub->callback([flags, exit_code] { *exit_code = RunReport(*flags); });
  return sub;
}

}  // namespace gpucast::cli
