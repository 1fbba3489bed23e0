// PLACEHOLDER owned by the sim helper: replace this file with the real command.
#include "cli/commands.h"

namespace gpucast::cli {

CLI::App* AddSimulate(CLI::App& root, int* exit_code) {
  CLI::App* sub = root.add_subcommand("simulate", "(not implemented yet)");
  sub->callback([exit_code] { *exit_code = Fail("simulate", "not implemented yet"); });
  return sub;
}

}  // namespace gpucast::cli
