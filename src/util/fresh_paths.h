// Paths a start-up may create, removed again when the start fails: `gpucast serve` that cannot
// listen (a port in use), load its TLS certificate or its cluster must not leave behind the
// database file and the folders it created for this run, and must never remove what was there
// before it started.
#pragma once

#include <string>
#include <vector>

namespace gpucast {

class FreshPaths {
 public:
  // Notes which of `paths` do not exist now (not even as a dangling symlink): only those are
  // this run's to remove.
  explicit FreshPaths(const std::vector<std::string>& paths);
  FreshPaths(const FreshPaths&) = delete;
  FreshPaths& operator=(const FreshPaths&) = delete;
  // Unless Keep() ran: removes each noted path that exists now (a folder with what is in it).
  ~FreshPaths();
  // The start succeeded: what it created stays.
  void Keep() { fresh_.clear(); }
  // The paths that did not exist when constructed (and will be removed unless kept).
  const std::vector<std::string>& fresh() const { return fresh_; }

 private:
  std::vector<std::string> fresh_;
};

}  // namespace gpucast
