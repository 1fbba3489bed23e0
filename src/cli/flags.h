// Flag parsing shared by the subcommands.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "util/status.h"

namespace gpucast::cli {

// Parses repeated "NAME=VALUE" flags (VALUE a positive integer) into dims.
// Errors: "--dim 'seq': expected NAME=VALUE with VALUE a positive integer".
Status ParseDimFlags(const std::vector<std::string>& flags, std::map<std::string, int64_t>* dims);

}  // namespace gpucast::cli
