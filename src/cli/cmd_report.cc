// gpucast report: a self-contained HTML page comparing simulation runs.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "sim/report.h"
#include "sim/text.h"

namespace gpucast::cli {
namespace {

struct ReportFlags {
  std::vector<std::string> dirs;
  std::string out, interference;
};

int RunReport(const ReportFlags& f) {
  namespace fs = std::filesystem;
  std::vector<sim::RunData> runs;
  std::string interference;
  if (!f.interference.empty()) {
    Result<std::string> text = sim::ReadFile(f.interference);  // bounded: a FIFO or device is an error
    if (!text.ok()) return Fail("report", text.message());
    interference = std::move(text).value();
  }
  std::set<std::string> seen;  // a run reached twice (a directory and one above it) counts once
  for (const std::string& d : f.dirs) {
    std::vector<std::string> expanded;
    if (fs::exists(d + "/summary.json")) {
      expanded.push_back(d);
    } else if (fs::is_directory(d)) {
      // A `simulate --policy all` / `--seeds` / sweep directory: every run below it, sorted.
      for (const auto& e : fs::recursive_directory_iterator(d))
        if (e.is_directory() && fs::exists(e.path() / "summary.json")) expanded.push_back(e.path().string());
      std::sort(expanded.begin(), expanded.end());
      // The sweep writes the interference validation beside the runs.
      if (f.interference.empty() && interference.empty() && fs::exists(d + "/interference.json")) {
        Result<std::string> text = sim::ReadFile(d + "/interference.json");
        if (!text.ok()) return Fail("report", text.message());
        interference = std::move(text).value();
      }
    }
    if (expanded.empty()) return Fail("report", d + ": no summary.json (not a simulate --out directory)");
    for (const std::string& x : expanded) {
      std::error_code ec;
      fs::path canon = fs::weakly_canonical(x, ec);
      if (!seen.insert(ec ? x : canon.string()).second) continue;
      auto r = sim::LoadRun(x);
      if (!r.ok()) return Fail("report", r.message());
      runs.push_back(std::move(r).value());
    }
  }
  if (Status st = sim::CheckOneDefaultSource(runs); !st.ok()) return Fail("report", st.message());
  std::ofstream out(f.out);
  if (!out) return Fail("report", f.out + ": cannot write");
  out << sim::RenderReport(runs, interference);
  if (!out) return Fail("report", f.out + ": write failed");
  std::printf("wrote %s (%zu runs)\n", f.out.c_str(), runs.size());
  return 0;
}

}  // namespace

CLI::App* AddReport(CLI::App& root, int* exit_code) {
  auto flags = std::make_shared<ReportFlags>();
  CLI::App* sub = root.add_subcommand("report", "HTML comparison of simulation runs (useful work, gains over seeds, load sweep, JCT)");
  sub->add_option("dirs", flags->dirs, "simulate --out directories, or any directory above them (--policy all, --seeds, tools/sweep.sh)")->required();
  sub->add_option("--out,-o", flags->out, "HTML file to write")->required();
  sub->add_option("--interference", flags->interference,
                  "Output of `gpucast interference --validate --json` to show (default: DIR/interference.json if present)");
  sub->callback([flags, exit_code] { *exit_code = RunReport(*flags); });
  return sub;
}

}  // namespace gpucast::cli
