// Where gpucast finds its shared measured data and its own repository files.
#pragma once

#include <string>

namespace gpucast {

// $GPUCAST_DATA if set, else the compiled-in default (../shared/data beside
// the checkout). The directory holds lucid/, philly/, gavel/, alibaba-gpu-v2023/.
std::string DataDir();

// $GPUCAST_HOME if set, else the source checkout the binary was built from
// (holds models/catalog.json).
std::string HomeDir();

}  // namespace gpucast
