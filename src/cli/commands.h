// The subcommands of the gpucast binary. Each Add* function adds one CLI11
// subcommand to `root` whose callback stores the command's exit code in
// `*exit_code` (0 ok, 1 failure, 2 usage error). The table in main.cc lists
// them all: adding a command is adding a row there.
#pragma once

#include <CLI/CLI.hpp>

namespace gpucast::cli {

using AddCommandFn = CLI::App* (*)(CLI::App& root, int* exit_code);

CLI::App* AddAnalyze(CLI::App& root, int* exit_code);   // cmd_analyze.cc
CLI::App* AddTrain(CLI::App& root, int* exit_code);     // cmd_train.cc
CLI::App* AddPredict(CLI::App& root, int* exit_code);   // cmd_predict.cc
CLI::App* AddEvaluate(CLI::App& root, int* exit_code);  // cmd_evaluate.cc
CLI::App* AddSimulate(CLI::App& root, int* exit_code);  // cmd_simulate.cc
CLI::App* AddReport(CLI::App& root, int* exit_code);    // cmd_report.cc
CLI::App* AddInterference(CLI::App& root, int* exit_code);  // cmd_interference.cc
CLI::App* AddServe(CLI::App& root, int* exit_code);     // cmd_serve.cc (in gpucast-serve only)
// `gpucast serve`: runs the gpucast-serve binary with the same arguments
// (execv: same process id), so that only the service loads the HTTP, TLS and
// SQLite libraries (serve_launcher.cc).
CLI::App* AddServeLauncher(CLI::App& root, int* exit_code);
CLI::App* AddGpus(CLI::App& root, int* exit_code);      // cmd_gpus.cc

// Prints "gpucast <cmd>: <message>" to stderr and returns 1 (commands.cc).
int Fail(const std::string& command, const std::string& message);

}  // namespace gpucast::cli
