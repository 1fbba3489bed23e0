// PLACEHOLDER owned by the service helper: replace this file with the real command.
#include "cli/commands.h"

namespace gpucast::cli {

CLI::App* AddServe(CLI::App& root, int* exit_code) {
  CLI::App* sub = root.add_subcommand("serve", "(not implemented yet)");
  sub->callback([exit_code] { *exit_code = Fail("serve", "not implemented yet"); });
  return sub;
}

}  // namespace gpucast::cli
