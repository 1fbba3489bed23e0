// gpucast serve: the HTTP/JSON submission service (docs/api.md).
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/flags.h"
#include "features/site_gpus.h"
#include "service/engine.h"
#include "service/k8s_pods.h"
#include "service/k8s_share.h"
#include "service/read_as.h"
#include "service/reload.h"
#include "service/scheduler.h"
#include "service/server.h"
#include "sim/interference.h"
#include "sim/workload.h"
#include "predict/observations.h"
#include "util/bounded_read.h"
#include "util/fresh_paths.h"
#include "util/paths.h"

namespace gpucast::cli {
namespace {

struct ServeFlags {
  std::string gpu_table;  // --gpu-table
  std::string listen;
  std::string db;
  std::string predictor;
  std::string cluster = "4x RTX3090";
  std::string policy = "predictive";
  std::string cap_rule = "sum";  // --cap-rule, as simulate's
  int max_jobs_per_gpu = sim::kMeasuredJobsPerGpu;  // --max-jobs-per-gpu, as simulate's
  std::string token_file;
  std::string deputy_token_file;
  std::string admin_token_file;
  int64_t deputy_min_uid = 1000;
  std::string pid_file;
  service::AnalysisOptions analysis;
  std::vector<std::string> model_roots;
  size_t max_body_bytes = 128u << 20;
  size_t max_json_body_bytes = 1u << 20;
  size_t upload_quota_bytes = 1ull << 30;
  std::string model_store;
  size_t model_store_quota_bytes = 1ull << 30;
  int read_timeout_s = 5;
  int request_timeout_s = 30;
  int max_connections = 1024;
  int max_connections_per_client = 256;
  int threads = 16;
  std::vector<std::string> dcgm_urls;
  double dcgm_interval_s = 15;
  std::string tls_cert, tls_key, tls_client_ca;
  std::vector<std::string> tls_client_subjects;
  service::JobLimits jobs;   // --max-jobs, --max-queued-jobs (defaults: the struct's)
  service::LoopLimits loop;  // --max-observations, --observed-graph-quota-bytes
  std::string k8s_share;           // "" = the Kubernetes routes are off; hami | fraction
  std::string k8s_headroom = "interval";  // percentage points, or "interval"
  bool k8s_fail_open = false;
  std::vector<std::string> k8s_nodes;
  std::string k8s_share_key_file;  // "" = DB.k8s-share-key
  std::string k8s_webhook_auth = "cert";  // cert | none
  bool k8s_watch_pods = false;
  std::string k8s_api_server, k8s_api_token_file, k8s_api_ca_file;
};

// --k8s-share, --k8s-headroom, --k8s-fail-open, --k8s-node -> the routes' config.
Result<service::K8sConfig> K8sFromFlags(const ServeFlags& f) {
  service::K8sConfig k;
  if (f.k8s_share.empty()) {
    if (!f.k8s_nodes.empty() || f.k8s_fail_open || f.k8s_headroom != "interval" || f.k8s_watch_pods ||
        !f.k8s_api_server.empty() || !f.k8s_share_key_file.empty() || f.k8s_webhook_auth != "cert") {
      return Status::Error("--k8s-node, --k8s-headroom, --k8s-fail-open, --k8s-watch-pods, --k8s-api-server, "
                           "--k8s-share-key-file and --k8s-webhook-auth need --k8s-share (hami or fraction)");
    }
    return k;
  }
  k.enabled = true;
  if (f.k8s_share == "hami") {
    k.share.mode = service::k8s::ShareMode::kHami;
  } else if (f.k8s_share == "fraction") {
    k.share.mode = service::k8s::ShareMode::kFraction;
  } else {
    return Status::Error("--k8s-share '" + f.k8s_share +
                         "': want hami (nvidia.com/gpucores and nvidia.com/gpumem limits) or fraction (the "
                         "gpu-fraction annotation of KAI Scheduler / Run:ai)");
  }
  if (f.k8s_headroom == "interval") {
    k.share.headroom_interval = true;
  } else {
    k.share.headroom_interval = false;
    char* end = nullptr;
    double v = std::strtod(f.k8s_headroom.c_str(), &end);
    if (f.k8s_headroom.empty() || *end != '\0' || !std::isfinite(v) || v < 0 || v > 100) {
      return Status::Error("--k8s-headroom '" + f.k8s_headroom +
                           "': want percentage points in [0, 100] added to the predicted utilization, or 'interval' "
                           "(the upper end of the prediction interval)");
    }
    k.share.headroom_points = v;
  }
  k.fail_open = f.k8s_fail_open;
  k.nodes = f.k8s_nodes;
  if (f.k8s_webhook_auth != "cert" && f.k8s_webhook_auth != "none") {
    return Status::Error("--k8s-webhook-auth '" + f.k8s_webhook_auth +
                         "': want cert (the API server presents a client certificate of --tls-client-ca, or the "
                         "job token) or none (a managed control plane that sends neither)");
  }
  k.webhook_open = f.k8s_webhook_auth == "none";
  // The key the webhook signs gpucast.io/share with, kept beside the database.
  ASSIGN_OR_RETURN(k.share_key, service::k8s::LoadOrCreateShareKey(
                                    f.k8s_share_key_file.empty() ? f.db + ".k8s-share-key" : f.k8s_share_key_file));
  if (!f.k8s_api_token_file.empty() || !f.k8s_api_ca_file.empty()) {
    if (f.k8s_api_server.empty()) return Status::Error("--k8s-api-token-file and --k8s-api-ca-file need --k8s-api-server");
  }
  if (!f.k8s_api_server.empty() && !f.k8s_watch_pods) {
    return Status::Error("--k8s-api-server needs --k8s-watch-pods (it says where to watch pods)");
  }
  if (f.k8s_watch_pods) k.pods = std::make_shared<service::k8s::PodView>();
  // The extender scores by the co-location physics fitted to the measured pairs.
  const std::string data = DataDir();
  ASSIGN_OR_RETURN(std::vector<sim::WorkloadProfile> w, sim::LoadWorkloads(data + "/lucid/single_data.csv"));
  ASSIGN_OR_RETURN(k.physics, sim::InterferenceModel::Fit(w, data + "/lucid/colocate_info.csv"));
  return k;
}

// The token is the file's content without surrounding whitespace.
Result<std::string> ReadToken(const std::string& path) {
  // Bounded (a FIFO or a device is an error at once; a token is short).
  Result<std::string> text = ReadFileBounded(path, 64 << 10, 10);
  if (!text.ok()) return text.status().Prefixed("token file");
  std::string t = std::move(text).value();
  size_t b = t.find_first_not_of(" \t\r\n"), e = t.find_last_not_of(" \t\r\n");
  if (b == std::string::npos) return Status::Error(path + ": token file is empty");
  t = t.substr(b, e - b + 1);
  if (t.find_first_of(" \t\r\n") != std::string::npos) {
    return Status::Error(path + ": token must be one line without spaces");
  }
  return t;
}

// Writes this process's pid to `path` (created or replaced, mode 0644) for
// `kill -HUP "$(cat PATH)"`; removed when serve stops.
class PidFile {
 public:
  static Result<std::unique_ptr<PidFile>> Write(const std::string& path) {
    const std::string tmp = path + ".tmp";
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) return Status::Error(path + ": cannot write pid file");
    const std::string text = std::to_string(getpid()) + "\n";
    const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    if (::close(fd) != 0 || !ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
      std::remove(tmp.c_str());
      return Status::Error(path + ": cannot write pid file");
    }
    return std::unique_ptr<PidFile>(new PidFile(path));
  }
  ~PidFile() { std::remove(path_.c_str()); }

 private:
  explicit PidFile(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

int RunServe(const ServeFlags& f) {
  if (Status t = InstallSiteGpuTable(f.gpu_table); !t.ok()) return Fail("serve", t.message());
  service::BlockStopSignals();  // before the predictor starts any thread
  service::BlockReloadSignal();  // SIGHUP reloads the predictor (ReloadOnSignal below)
  service::ServiceOptions opts;
  opts.db_path = f.db;
  opts.model_roots = f.model_roots;
  opts.max_body_bytes = f.max_body_bytes;
  opts.max_json_body_bytes = f.max_json_body_bytes;
  opts.upload_quota_bytes = f.upload_quota_bytes;
  opts.model_store_dir = f.model_store;
  opts.model_store_quota_bytes = f.model_store_quota_bytes;
  opts.read_timeout_s = f.read_timeout_s;
  opts.request_timeout_s = f.request_timeout_s;
  opts.max_connections = f.max_connections;
  opts.max_connections_per_client = f.max_connections_per_client;
  opts.threads = f.threads;
  opts.dcgm_urls = f.dcgm_urls;
  opts.dcgm_interval_s = f.dcgm_interval_s;
  opts.tls = {f.tls_cert, f.tls_key, f.tls_client_ca, f.tls_client_subjects};
  if (!f.tls_client_subjects.empty() && f.tls_client_ca.empty()) {
    return Fail("serve", "--tls-client-subject needs --tls-client-ca (the CA whose client certificates it narrows)");
  }
  opts.jobs = f.jobs;
  opts.loop = f.loop;
  // The database (jobs and observations) is absent or a regular file: SQLite said only "disk I/O
  // error" for a FIFO or /dev/zero and "unable to open database file" for a directory.
  if (Status s = DatabaseFileStatus(f.db, /*may_be_absent=*/true); !s.ok()) {
    return Fail("serve", "--db " + s.message());
  }
  // What this start creates (the database, its WAL files, the upload, model-store and observed
  // folders, the Kubernetes share key) is removed again if the start fails before it listens (a
  // bad --cluster or --tls-cert, a port in use); what existed before is never touched. Declared
  // before the service, so removed after the service has closed them.
  FreshPaths created({f.db, f.db + "-wal", f.db + "-shm", f.db + "-journal", f.db + ".models",
                      f.model_store.empty() ? f.db + ".model-store" : f.model_store, ObservedGraphDir(f.db),
                      f.k8s_share_key_file.empty() ? f.db + ".k8s-share-key" : f.k8s_share_key_file});
  {
    Result<service::K8sConfig> k = K8sFromFlags(f);
    if (!k.ok()) return Fail("serve", k.message());
    opts.k8s = std::move(k).value();
  }
  // Where the pods are watched (started once the service is up).
  service::k8s::ApiServer api;
  if (opts.k8s.pods) {
    if (f.k8s_api_server.empty()) {
      auto in = service::k8s::InClusterApiServer();
      if (!in.ok()) return Fail("serve", in.message());
      api = *in;
    } else {
      api.url = f.k8s_api_server;
      api.token_file = f.k8s_api_token_file;
      api.ca_file = f.k8s_api_ca_file;
    }
  }
  // Room for every allowed connection, the database and the models being read.
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    rlim_t want = static_cast<rlim_t>(f.max_connections) + 256;
    if (rl.rlim_cur < want) {
      rl.rlim_cur = std::min(want, rl.rlim_max);
      setrlimit(RLIMIT_NOFILE, &rl);
    }
  }
  if (!f.token_file.empty()) {
    auto token = ReadToken(f.token_file);
    if (!token.ok()) return Fail("serve", token.message());
    opts.token = *token;
  }
  if (!f.deputy_token_file.empty()) {
    auto deputy = ReadToken(f.deputy_token_file);
    if (!deputy.ok()) return Fail("serve", deputy.message());
    if (*deputy == opts.token) {
      return Fail("serve", "--deputy-token-file: must differ from --token-file (the deputy token lets its bearer "
                           "have files read as any user)");
    }
    // Refused now, not on the first Slurm submission.
    Status can = service::CanReadAsOtherUsers();
    if (!can.ok()) return Fail("serve", "--deputy-token-file: " + can.message());
    opts.deputy_token = *deputy;
  }
  opts.deputy_min_uid = static_cast<uid_t>(f.deputy_min_uid);
  if (!f.admin_token_file.empty()) {
    auto admin = ReadToken(f.admin_token_file);
    if (!admin.ok()) return Fail("serve", admin.message());
    if (*admin == opts.token || *admin == opts.deputy_token) {
      return Fail("serve", "--admin-token-file: must differ from --token-file and --deputy-token-file");
    }
    opts.admin_token = *admin;
  }
  if (f.analysis.threads + f.analysis.queue >= f.threads) {
    return Fail("serve", "--analysis-threads " + std::to_string(f.analysis.threads) + " + --analysis-queue " +
                             std::to_string(f.analysis.queue) + " must be below --threads " + std::to_string(f.threads) +
                             " (HTTP workers must stay free while graphs are analysed)");
  }
  // The cluster first: a typo in its GPU type stops serve before anything starts.
  auto scheduler = service::NewPolicyScheduler(f.cluster, f.policy, DataDir(), f.cap_rule, f.max_jobs_per_gpu);
  if (!scheduler.ok()) return Fail("serve", scheduler.message());
  auto analyzer = std::make_shared<service::GraphAnalyzer>(f.analysis);
  auto engine = service::NewReloadingPredictorEngine(f.predictor, analyzer);
  if (!engine.ok()) return Fail("serve", engine.message());
  auto svc = service::Service::Create(opts, std::move(engine).value(), std::move(scheduler).value());
  if (!svc.ok()) return Fail("serve", svc.message());
  if (opts.k8s.pods) {
    Status w = opts.k8s.pods->StartWatching(api, opts.k8s.share_key);
    if (!w.ok()) return Fail("serve", w.message());
  }
  std::unique_ptr<PidFile> pid_file;
  if (!f.pid_file.empty()) {
    auto written = PidFile::Write(f.pid_file);
    if (!written.ok()) return Fail("serve", written.message());
    pid_file = std::move(written).value();
  }
  std::string roots;
  for (const std::string& r : f.model_roots) roots += (roots.empty() ? "" : ", ") + r;
  std::fprintf(stderr, "gpucast serve: db %s, predictor %s, cluster '%s', policy %s, auth %s, model roots %s\n",
               f.db.c_str(), f.predictor.c_str(), f.cluster.c_str(), f.policy.c_str(),
               opts.token.empty() ? "off (anyone who can connect may submit, read and cancel)" : "bearer token",
               roots.empty() ? "none (model paths refused; uploads only)" : roots.c_str());
  if (!f.tls_cert.empty()) {
    std::fprintf(stderr, "gpucast serve: TLS %s%s\n", f.tls_cert.c_str(),
                 f.tls_client_ca.empty() ? "" : (", client certificates verified against " + f.tls_client_ca).c_str());
  }
  if (opts.k8s.enabled) {
    std::string nodes;
    for (const std::string& n : f.k8s_nodes) nodes += (nodes.empty() ? "" : ", ") + n;
    std::fprintf(stderr, "gpucast serve: Kubernetes routes on (/k8s/v1/mutate, filter, prioritize): share %s, headroom "
                         "%s, %s, nodes %s, running pods %s%s%s\n",
                 f.k8s_share.c_str(), f.k8s_headroom.c_str(), f.k8s_fail_open ? "fail open" : "fail closed",
                 nodes.empty() ? "none (the extender fails every node)" : nodes.c_str(),
                 opts.k8s.pods ? ("watched at " + api.url).c_str()
                               : "not watched (the extender sees only /v1/jobs; --k8s-watch-pods)",
                 opts.k8s.webhook_open ? "; /k8s/v1/mutate open to any caller (--k8s-webhook-auth none)" : "",
                 opts.token.empty() && f.tls_client_ca.empty()
                     ? "; no --token-file or --tls-client-ca: anyone who can connect may call them"
                     : "");
  }
  // SIGHUP: the predictor file and the TLS certificate are read again.
  service::ReloadOnSignal hup([&svc] {
    (void)(*svc)->ReloadPredictor("SIGHUP");
    (void)(*svc)->ReloadTls("SIGHUP");
  });
  Status st = service::ServeUntilSignal(svc->get(), f.listen, [&created] { created.Keep(); });
  if (!st.ok()) return Fail("serve", st.message());
  return 0;
}

}  // namespace

CLI::App* AddServe(CLI::App& root, int* exit_code) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* sub = root.add_subcommand(
      "serve", "HTTP/JSON submission service: predicts each job's GPU utilization and places jobs "
               "on a cluster with the simulator's policies (docs/api.md)");
  AddGpuTable(sub, &flags->gpu_table);
  sub->add_option("--listen", flags->listen, "HOST:PORT to listen on (port 0: any free port; the "
                                             "bound address is printed as 'listening on HOST:PORT')")
      ->required();
  sub->add_option("--db", flags->db, "SQLite database of jobs (created if missing; WAL, fsync per commit)")
      ->required();
  sub->add_option("--predictor", flags->predictor, "predictor file written by 'gpucast train'; SIGHUP or POST /v1/admin/reload reads it again "
                  "(a file that does not load leaves the old predictor serving)")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("--cluster", flags->cluster,
                  "GPUs to schedule onto, as for 'gpucast simulate' (\"8x RTX3090\", "
                  "\"nodes=2,gpus_per_node=4\"; node groups of several GPU types separated by ';': "
                  "\"nodes=2,gpus_per_node=8,type=A100-80GB;nodes=2,gpus_per_node=8,type=H100\")")
      ->capture_default_str();
  sub->add_option("--policy", flags->policy,
                  "placement policy from the simulator's table: slot, predictive, predictive-spread, "
                  "interference-aware, predictive-feedback (packs by each running job's estimate once it "
                  "is observed: prediction and observation weighed by their uncertainties; never migrates)")
      ->capture_default_str();
  sub->add_option("--cap-rule", flags->cap_rule,
                  "the capped policies' rule, as 'gpucast simulate --cap-rule': sum (the paper's: a GPU's "
                  "summed predicted utilization <= 100) or capacity (<= 100 x the work capacity fitted on the "
                  "measured co-located pairs, 120 on the RTX 3090; docs/simulator.md)")
      ->capture_default_str();
  sub->add_option("--max-jobs-per-gpu", flags->max_jobs_per_gpu,
                  "the most jobs placed on one GPU, as 'gpucast simulate --max-jobs-per-gpu'; 0: no limit. The "
                  "default is the most jobs the interference physics was measured on (pairs)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  sub->add_option("--token-file", flags->token_file,
                  "file holding a bearer token; every route but /healthz and /metrics then needs "
                  "'Authorization: Bearer <token>'");
  sub->add_option("--deputy-token-file", flags->deputy_token_file,
                  "file holding a second bearer token, for slurmctld's job_submit.lua (service mode): a "
                  "request bearing it may send 'X-Gpucast-Read-As: UID:GID' and its model paths are then "
                  "opened with that user's file identity (any path the user may read; not the model roots). "
                  "Needs root or CAP_SETUID+CAP_SETGID (docs/security.md)");
  IntIn(sub->add_option("--deputy-min-uid", flags->deputy_min_uid,
                  "lowest uid the deputy may have files read as (uid 0 never); the gid must be one of the uid's "
                  "groups")
      ->capture_default_str(),
      int64_t{1}, int64_t{1} << 31);
  sub->add_option("--admin-token-file", flags->admin_token_file,
                  "file holding a third bearer token, the only one /v1/admin/* accepts; without it those routes "
                  "are off whenever another token is set (SIGHUP still reloads)");
  sub->add_option("--pid-file", flags->pid_file,
                  "write serve's pid to this file (removed at exit), for kill -HUP \"$(cat FILE)\"");
  IntIn(sub->add_option("--max-graph-nodes", flags->analysis.limits.max_nodes,
                  "largest graph analysed, in nodes counting those of subgraphs; larger get 422")
      ->capture_default_str(),
      int64_t{1}, int64_t{1} << 30);
  IntIn(sub->add_option("--max-graph-entries", flags->analysis.limits.max_entries,
                  "largest graph analysed, in entries (nodes, initializers, inputs, outputs, value_info, "
                  "attributes) counting those of subgraphs; larger get 422")
      ->capture_default_str(),
      int64_t{1}, int64_t{1} << 30);
  IntIn(sub->add_option("--max-subgraph-depth", flags->analysis.limits.max_subgraph_depth,
                  "deepest nesting of If/Loop/Scan subgraphs analysed; deeper get 422")
      ->capture_default_str(),
      0, 32);
  IntIn(sub->add_option("--max-graph-rank", flags->analysis.limits.max_rank,
                  "most dimensions of one tensor of a graph analysed; more get 422")
      ->capture_default_str(),
      1, 1024);
  IntIn(sub->add_option("--max-slot-dims", flags->analysis.limits.max_slot_dims,
                  "most shape dimensions at all node inputs and outputs of a graph analysed (a slot counts 1 plus "
                  "its tensor's rank); more get 422")
      ->capture_default_str(),
      int64_t{1}, int64_t{1} << 31);
  BytesIn(sub->add_option("--max-graph-bytes", flags->analysis.limits.max_graph_bytes,
                  "largest graph analysed, in bytes of the ONNX file without its weights; larger get 413")
      ->capture_default_str(),
      int64_t{1024}, int64_t{1} << 31);
  FloatIn(sub->add_option("--max-analysis-seconds", flags->analysis.limits.max_seconds,
                  "longest analysis of one graph (load, shapes, cost); longer get 422")
      ->capture_default_str(),
      0.01, 3600.0);
  IntIn(sub->add_option("--analysis-threads", flags->analysis.threads,
                  "graphs analysed at once, on threads of their own (not the HTTP workers)")
      ->capture_default_str(),
      1, 256);
  IntIn(sub->add_option("--analysis-queue", flags->analysis.queue,
                  "analyses waiting for an analysis thread; more get 503 at once")
      ->capture_default_str(),
      0, 1024);
  IntIn(sub->add_option("--k8s-analysis-threads", flags->analysis.webhook_threads,
                  "threads that analyse only the Kubernetes webhook's graphs, beside --analysis-threads")
      ->capture_default_str(),
      0, 256);
  IntIn(sub->add_option("--k8s-analysis-queue", flags->analysis.webhook_queue,
                  "webhook analyses waiting for a thread (served round-robin by namespace); more get 503 at once")
      ->capture_default_str(),
      0, 4096);
  FloatIn(sub->add_option("--k8s-analysis-wait", flags->analysis.webhook_wait_s,
                  "seconds a webhook analysis may wait for a thread before the pod is refused (keep it under the "
                  "webhook's timeoutSeconds, 10 by default)")
      ->capture_default_str(),
      0.0, 30.0);
  BytesIn(sub->add_option("--graph-cache-bytes", flags->analysis.cache_bytes,
                  "analysed graphs kept (by the SHA-256 of their bytes without weights), in estimated bytes")
      ->capture_default_str(),
      size_t{0}, size_t{1} << 40);
  sub->add_option("--model-root", flags->model_roots,
                  "directory whose ONNX files clients may name by path (repeatable; relative paths are "
                  "looked up under each root in turn); none: every model path is refused, uploads only")
      ->check(CLI::ExistingDirectory);
  BytesIn(sub->add_option("--max-body-bytes", flags->max_body_bytes,
                  "largest application/octet-stream (ONNX upload) body; larger get 413")
      ->capture_default_str(),
      size_t{1}, size_t{1} << 32);
  BytesIn(sub->add_option("--max-json-bytes", flags->max_json_body_bytes,
                  "largest body of any other type (JSON jobs; never more than --max-body-bytes); larger get 413")
      ->capture_default_str(),
      size_t{1}, size_t{1} << 30);
  BytesIn(sub->add_option("--upload-quota-bytes", flags->upload_quota_bytes,
                  "bytes of uploaded models kept for queued and running jobs, in total; an upload over it gets 507")
      ->capture_default_str(),
      size_t{1}, size_t{1} << 40);
  IntIn(sub->add_option("--max-jobs", flags->jobs.max_jobs,
                  "job records the service keeps, in every state (done and cancelled ones too); a submission over "
                  "it gets 507")
      ->capture_default_str(),
      int64_t{1}, int64_t{1'000'000'000});
  IntIn(sub->add_option("--max-queued-jobs", flags->jobs.max_queued_jobs,
                  "jobs waiting to be placed at once; a submission over it gets 503")
      ->capture_default_str(),
      int64_t{1}, int64_t{1} << 30);
  IntIn(sub->add_option("--max-observations", flags->loop.max_observations,
                  "observations the service keeps, of all jobs together; one over it gets 507")
      ->capture_default_str(),
      int64_t{1}, int64_t{1'000'000'000});
  BytesIn(sub->add_option("--observed-graph-quota-bytes", flags->loop.observed_graph_quota_bytes,
                  "bytes of uploaded graphs kept for training after their jobs end (DB.observed/); an observed "
                  "job's graph over it is not kept")
      ->capture_default_str(),
      size_t{0}, size_t{1} << 40);
  IntIn(sub->add_option("--read-timeout", flags->read_timeout_s,
                  "seconds a client may stay silent in the middle of a request (408) or while idle "
                  "between keep-alive requests (closed)")
      ->capture_default_str(),
      1, 300);
  IntIn(sub->add_option("--request-timeout", flags->request_timeout_s,
                  "seconds from a request's first byte to its last, headers and body, however "
                  "slowly they drip (408 after it)")
      ->capture_default_str(),
      1, 3600);
  IntIn(sub->add_option("--max-connections", flags->max_connections, "open connections in total (503 over it)")
      ->capture_default_str(),
      1, 65536);
  IntIn(sub->add_option("--max-connections-per-client", flags->max_connections_per_client,
                  "open connections from one client IP address (503 over it)")
      ->capture_default_str(),
      1, 65536);
  IntIn(sub->add_option("--threads", flags->threads, "HTTP worker threads")
      ->capture_default_str(),
      1, 1024);
  sub->add_option("--dcgm-url", flags->dcgm_urls,
                  "DCGM exporter page to scrape (http://HOST:PORT/metrics; repeatable: the n-th covers the "
                  "cluster's n-th node); a GPU's DCGM_FI_DEV_GPU_UTIL becomes an observation of the job "
                  "running alone on it (docs/operations.md)");
  FloatIn(sub->add_option("--dcgm-interval", flags->dcgm_interval_s, "seconds between DCGM scrapes")
      ->capture_default_str(),
      0.05, 3600.0);
  sub->add_option("--tls-cert", flags->tls_cert,
                  "PEM certificate (and chain) to serve HTTPS with; every connection then speaks TLS 1.2+. "
                  "SIGHUP reads it and --tls-key again (new connections get the new one)")
      ->check(CLI::ExistingFile);
  sub->add_option("--tls-key", flags->tls_key, "PEM private key of --tls-cert")->check(CLI::ExistingFile);
  sub->add_option("--tls-client-ca", flags->tls_client_ca,
                  "PEM CA certificate(s): a client that presents a certificate must present one they signed; a "
                  "verified certificate admits the Kubernetes routes (the API server, kube-scheduler) in place of "
                  "the bearer token (docs/security.md)")
      ->check(CLI::ExistingFile);
  sub->add_option("--tls-client-subject", flags->tls_client_subjects,
                  "name a --tls-client-ca certificate must carry to count (its subject CN, or a DNS, URI or email "
                  "subjectAltName; exact match; repeatable), e.g. the API server's; any other counts as none");
  sub->add_option("--model-store", flags->model_store,
                  "directory of models stored by content (POST /v1/models; a request names one "
                  "\"sha256:<hex>\"; default: DB.model-store)");
  BytesIn(sub->add_option("--model-store-quota-bytes", flags->model_store_quota_bytes,
                          "bytes the model store may hold; a new model over it gets 507")
              ->capture_default_str(),
          size_t{1}, size_t{1} << 40);
  sub->add_option("--k8s-share", flags->k8s_share,
                  "turn on the Kubernetes admission webhook and scheduler extender (POST /k8s/v1/mutate, "
                  "/k8s/v1/filter, /k8s/v1/prioritize; docs/kubernetes.md) and say how a pod's share is written: "
                  "hami (nvidia.com/gpucores and nvidia.com/gpumem limits) or fraction (KAI's gpu-fraction "
                  "annotation)");
  sub->add_option("--k8s-headroom", flags->k8s_headroom,
                  "percentage points added to the predicted utilization before it becomes a share, or 'interval' "
                  "(the upper end of the prediction interval)")
      ->capture_default_str();
  sub->add_flag("--k8s-fail-open", flags->k8s_fail_open,
                "a pod gpucast cannot size (unreadable model, uncostable graph, bad annotation) is allowed "
                "unchanged with a warning instead of denied");
  sub->add_option("--k8s-node", flags->k8s_nodes,
                  "Kubernetes node name of the cluster's n-th node (repeatable, in --cluster's node order); the "
                  "extender fails nodes not named");
  sub->add_option("--k8s-share-key-file", flags->k8s_share_key_file,
                  "secret key (32+ random bytes, mode 0600; created if missing) the webhook signs gpucast.io/share "
                  "with; the extender acts only on shares whose signature verifies (default: DB.k8s-share-key)");
  sub->add_option("--k8s-webhook-auth", flags->k8s_webhook_auth,
                  "who may call POST /k8s/v1/mutate: cert (a client certificate of --tls-client-ca, or the job "
                  "token) or none (any caller: managed control planes send neither; docs/kubernetes.md)")
      ->capture_default_str();
  sub->add_flag("--k8s-watch-pods", flags->k8s_watch_pods,
                "list and watch the API server's pods that have a node, so that the extender counts what runs "
                "(in a pod: the service account's token and CA; else --k8s-api-server)");
  sub->add_option("--k8s-api-server", flags->k8s_api_server,
                  "the API server to watch pods at, https://HOST:PORT (http:// only for a test's stub)");
  sub->add_option("--k8s-api-token-file", flags->k8s_api_token_file,
                  "bearer token for --k8s-api-server (read again on every connection)");
  sub->add_option("--k8s-api-ca-file", flags->k8s_api_ca_file, "PEM CA of --k8s-api-server's certificate");
  sub->callback([flags, exit_code] { *exit_code = RunServe(*flags); });
  return sub;
}

}  // namespace gpucast::cli
