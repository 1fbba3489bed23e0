// gpucast-serve: the binary `gpucast serve` runs (serve_launcher.cc). Its only
// command is serve (cmd_serve.cc); it links the service layer, which the
// gpucast binary does not.
#include <iostream>
#include <string>

#include "cli/commands.h"

int main(int argc, char** argv) {
  using namespace gpucast::cli;
  CLI::App app{"gpucast serve: the HTTP/JSON submission service (docs/api.md)", "gpucast"};
  app.set_version_flag("--version", std::string("gpucast ") + GPUCAST_VERSION);
  app.require_subcommand(1);
  int exit_code = 0;
  AddServe(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return exit_code;
}
