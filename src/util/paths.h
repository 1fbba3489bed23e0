// Where gpucast finds its shared measured data and its own files (models/catalog.json).
//
// No path of the source tree is built into the binary. Both directories are found next to
// the executable: the nearest of its directory and that directory's ancestors that holds
// share/gpucast/. An installed gpucast (make install PREFIX=P: P/bin/gpucast) uses
// P/share/gpucast; a build tree has BUILD/share/gpucast/{models,data}, links to the
// checkout's models/ and the shared data made when cmake configures the build.
#pragma once

#include <string>

namespace gpucast {

// $GPUCAST_DATA if set, else SHARE/data (SHARE = the share/gpucast directory above).
// The directory holds lucid/, philly/, gavel/, alibaba-gpu-v2023/.
std::string DataDir();

// $GPUCAST_HOME if set, else SHARE (holds models/catalog.json and the models).
std::string HomeDir();

// SHARE, or "" when no share/gpucast directory is found above the executable.
std::string ShareDir();

}  // namespace gpucast
