#include "util/paths.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace gpucast {
namespace {

namespace fs = std::filesystem;

// Said in place of a directory when none is found, so that the error about the file that
// cannot be opened tells the user what to set.
constexpr char kNoData[] = "(gpucast data not found: no share/gpucast above the executable; set GPUCAST_DATA)";
constexpr char kNoHome[] = "(gpucast files not found: no share/gpucast above the executable; set GPUCAST_HOME)";

std::string FindShareDir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  for (fs::path d = exe.parent_path(); !d.empty(); d = d.parent_path()) {
    fs::path share = d / "share" / "gpucast";
    if (fs::is_directory(share, ec)) return share.string();
    if (d == d.root_path()) break;
  }
  return "";
}

}  // namespace

std::string ShareDir() {
  static const std::string dir = FindShareDir();
  return dir;
}

std::string DataDir() {
  const char* env = std::getenv("GPUCAST_DATA");
  if (env && *env) return env;
  return ShareDir().empty() ? kNoData : ShareDir() + "/data";
}

std::string HomeDir() {
  const char* env = std::getenv("GPUCAST_HOME");
  if (env && *env) return env;
  return ShareDir().empty() ? kNoHome : ShareDir();
}

}  // namespace gpucast
