// gpucast serve: the HTTP/JSON submission service (docs/api.md).
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "service/engine.h"
#include "service/scheduler.h"
#include "service/server.h"
#include "util/paths.h"

namespace gpucast::cli {
namespace {

struct ServeFlags {
  std::string listen;
  std::string db;
  std::string predictor;
  std::string cluster = "4x RTX3090";
  std::string policy = "predictive";
  std::string token_file;
  size_t max_body_bytes = 128u << 20;
  int read_timeout_s = 5;
  int threads = 16;
};

// The token is the file's content without surrounding whitespace.
Result<std::string> ReadToken(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::Error(path + ": cannot read token file");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string t = ss.str();
  size_t b = t.find_first_not_of(" \t\r\n"), e = t.find_last_not_of(" \t\r\n");
  if (b == std::string::npos) return Status::Error(path + ": token file is empty");
  t = t.substr(b, e - b + 1);
  if (t.find_first_of(" \t\r\n") != std::string::npos) {
    return Status::Error(path + ": token must be one line without spaces");
  }
  return t;
}

int RunServe(const ServeFlags& f) {
  service::BlockStopSignals();  // before the predictor starts any thread
  service::ServiceOptions opts;
  opts.db_path = f.db;
  opts.max_body_bytes = f.max_body_bytes;
  opts.read_timeout_s = f.read_timeout_s;
  opts.threads = f.threads;
  if (!f.token_file.empty()) {
    auto token = ReadToken(f.token_file);
    if (!token.ok()) return Fail("serve", token.message());
    opts.token = *token;
  }
  auto engine = service::NewPredictorEngine(f.predictor);
  if (!engine.ok()) return Fail("serve", engine.message());
  auto scheduler = service::NewPolicyScheduler(f.cluster, f.policy, DataDir());
  if (!scheduler.ok()) return Fail("serve", scheduler.message());
  auto svc = service::Service::Create(opts, std::move(engine).value(), std::move(scheduler).value());
  if (!svc.ok()) return Fail("serve", svc.message());
  std::fprintf(stderr, "gpucast serve: db %s, cluster '%s', policy %s, auth %s\n", f.db.c_str(),
               f.cluster.c_str(), f.policy.c_str(), opts.token.empty() ? "off" : "bearer token");
  Status st = service::ServeUntilSignal(svc->get(), f.listen);
  if (!st.ok()) return Fail("serve", st.message());
  return 0;
}

}  // namespace

CLI::App* AddServe(CLI::App& root, int* exit_code) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* sub = root.add_subcommand(
      "serve", "HTTP/JSON submission service: predicts each job's GPU utilization and places jobs "
               "on a cluster with the simulator's policies (docs/api.md)");
  sub->add_option("--listen", flags->listen, "HOST:PORT to listen on (port 0: any free port; the "
                                             "bound address is printed as 'listening on HOST:PORT')")
      ->required();
  sub->add_option("--db", flags->db, "SQLite database of jobs (created if missing; WAL, fsync per commit)")
      ->required();
  sub->add_option("--predictor", flags->predictor, "predictor file written by 'gpucast train'")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("--cluster", flags->cluster,
                  "GPUs to schedule onto, as for 'gpucast simulate' (\"8x RTX3090\", "
                  "\"nodes=2,gpus_per_node=4\")")
      ->capture_default_str();
  sub->add_option("--policy", flags->policy,
                  "placement policy from the simulator's table: slot, predictive, predictive-spread, "
                  "interference-aware")
      ->capture_default_str();
  sub->add_option("--token-file", flags->token_file,
                  "file holding a bearer token; POST /v1/jobs and DELETE then need "
                  "'Authorization: Bearer <token>'");
  sub->add_option("--max-body-bytes", flags->max_body_bytes, "larger request bodies get 413")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{1} << 32));
  sub->add_option("--read-timeout", flags->read_timeout_s,
                  "seconds a client may stall while sending a request before it is dropped")
      ->capture_default_str()
      ->check(CLI::Range(1, 300));
  sub->add_option("--threads", flags->threads, "HTTP worker threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  sub->callback([flags, exit_code] { *exit_code = RunServe(*flags); });
  return sub;
}

}  // namespace gpucast::cli
