// PLACEHOLDER owned by the sim helper: replace this file with the real command.
#include "cli/commands.h"

namespace gpucast::cli {

CLI::App* AddReport(CLI::App& root, int* exit_code) {
  CLI::App* sub = root.add_subcommand("report", "(not implemented yet)");
  sub->callback([exit_code] { *exit_code = Fail("report", "not implemented yet"); });
  return sub;
}

}  // namespace gpucast::cli
