#include "cli/commands.h"

#include <iostream>

namespace gpucast::cli {

int Fail(const std::string& command, const std::string& message) {
  std::cerr << "gpucast " << command << ": " << message << "\n";
  return 1;
}

}  // namespace gpucast::cli
