// PLACEHOLDER owned by the predict helper: replace this file with the real command.
#include "cli/commands.h"

namespace gpucast::cli {

CLI::App* AddTrain(CLI::App& root, int* exit_code) {
  CLI::App* sub = root.add_subcommand("train", "(not implemented yet)");
  sub->callback([exit_code] { *exit_code = Fail("train", "not implemented yet"); });
  return sub;
}

}  // namespace gpucast::cli
