// `gpucast serve` in the gpucast binary: it runs gpucast-serve, the binary that
// holds the service (cmd_serve.cc and the service layer), with the same
// arguments. The service's libraries (cpp-httplib, OpenSSL, brotli) are then
// loaded by the service only, not by every `gpucast predict` (docs/performance.md).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "cli/commands.h"

namespace gpucast::cli {
namespace {

// gpucast-serve beside this executable (build tree), else PREFIX/lib/gpucast/
// (installed: PREFIX/bin/gpucast); "" when neither exists.
std::string FindServeBinary() {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  for (const fs::path& p : {exe.parent_path() / "gpucast-serve",
                            exe.parent_path().parent_path() / "lib" / "gpucast" / "gpucast-serve"})
    if (::access(p.c_str(), X_OK) == 0) return p.string();
  return "";
}

int ExecServe(const std::vector<std::string>& args) {
  const std::string bin = FindServeBinary();
  if (bin.empty())
    return Fail("serve", "gpucast-serve not found beside this executable or in ../lib/gpucast/ (a partial install?)");
  std::vector<std::string> all = {"gpucast", "serve"};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execv(bin.c_str(), argv.data());
  return Fail("serve", bin + ": cannot run: " + std::strerror(errno));
}

}  // namespace

CLI::App* AddServeLauncher(CLI::App& root, int* exit_code) {
  CLI::App* sub = root.add_subcommand(
      "serve", "HTTP/JSON submission service: predicts each job's GPU utilization and places jobs "
               "on a cluster with the simulator's policies (docs/api.md)");
  // Every argument, --help included, goes to gpucast-serve unparsed.
  sub->set_help_flag();
  sub->prefix_command();
  sub->callback([sub, exit_code] { *exit_code = ExecServe(sub->remaining()); });
  return sub;
}

}  // namespace gpucast::cli
