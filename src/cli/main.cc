// gpucast: predicts a training job's GPU utilization from its model graph and
// packs jobs onto shared GPUs. This file is only the subcommand table.
#include <cstdio>
#include <iostream>
#include <string>

#include "cli/commands.h"

namespace gpucast::cli {

struct CommandRow {
  const char* name;
  AddCommandFn add;
};

// One row per subcommand, in the order `gpucast --help` lists them.
constexpr CommandRow kCommands[] = {
    {"analyze", AddAnalyze},    // graph -> per-op training cost, features
    {"train", AddTrain},        // measurements + graphs -> predictor file
    {"predict", AddPredict},    // predictor + graph -> utilization
    {"evaluate", AddEvaluate},  // cross-validated error of the predictors
    {"simulate", AddSimulate},  // trace-driven cluster simulation
    {"report", AddReport},      // HTML comparison of simulation runs
    {"interference", AddInterference},  // fitted co-location physics for given utilizations
    {"serve", AddServeLauncher},  // HTTP submission service (runs gpucast-serve, serve_launcher.cc)
    {"gpus", AddGpus},          // the GPU table
};

}  // namespace gpucast::cli

int main(int argc, char** argv) {
  using namespace gpucast::cli;
  CLI::App app{
      "gpucast: predict the GPU utilization of a deep-learning training job from its model graph,\n"
      "and simulate or run a cluster that co-locates jobs by those predictions.",
      "gpucast"};
  app.set_version_flag("--version", std::string("gpucast ") + GPUCAST_VERSION);
  app.require_subcommand(1);
  app.footer("Run 'gpucast COMMAND --help' for a command's flags. Docs: docs/ in the source tree.");
  int exit_code = 0;
  // Only the subcommand asked for is built (each Add* builds its options, help
  // texts and defaults, which every process would pay for); all of them for
  // `gpucast --help` and for anything that is not a command name.
  bool named = false;
  for (const CommandRow& row : kCommands) named = named || (argc > 1 && std::string(argv[1]) == row.name);
  for (const CommandRow& row : kCommands) {
    if (named && std::string(argv[1]) != row.name) continue;
    CLI::App* sub = row.add(app, &exit_code);
    if (sub->get_name() != row.name) {
      std::cerr << "internal error: command table row '" << row.name << "' added '"
                << sub->get_name() << "'\n";
      return 70;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return exit_code;
}
