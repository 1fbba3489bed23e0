#include "util/paths.h"

#include <cstdlib>

namespace gpucast {

std::string DataDir() {
  const char* env = std::getenv("GPUCAST_DATA");
  return env && *env ? env : GPUCAST_DEFAULT_DATA_DIR;
}

std::string HomeDir() {
  const char* env = std::getenv("GPUCAST_HOME");
  return env && *env ? env : GPUCAST_SOURCE_DIR;
}

}  // namespace gpucast
