#include "util/fresh_paths.h"

#include <filesystem>
#include <system_error>

namespace gpucast {

namespace fs = std::filesystem;

FreshPaths::FreshPaths(const std::vector<std::string>& paths) {
  for (const std::string& p : paths) {
    if (p.empty()) continue;
    std::error_code ec;
    fs::file_status st = fs::symlink_status(p, ec);
    // Only a path known to be absent is ours: an error other than "not found" (a folder we
    // may not search) leaves it alone.
    if (st.type() == fs::file_type::not_found) fresh_.push_back(p);
  }
}

FreshPaths::~FreshPaths() {
  for (const std::string& p : fresh_) {
    std::error_code ec;
    fs::remove_all(p, ec);  // a symlink is removed itself, never what it points to
  }
}

}  // namespace gpucast
