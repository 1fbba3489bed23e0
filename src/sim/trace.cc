#include "sim/trace.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "sim/text.h"

namespace gpucast::sim {

namespace {

// Collects rows, applying the bad-line policy. Each loader parses one line
// into a TraceJob or an error reason.
class RowSink {
 public:
  RowSink(std::string file, const TraceOptions& opt) : file_(std::move(file)), opt_(opt) {}
  // Returns an error unless skipping bad lines.
  Status Bad(size_t line_no, const std::string& reason) {
    if (opt_.skip_bad_lines) {
      ++bad_;
      return Status::Ok();
    }
    return Status::Error(file_ + ": line " + std::to_string(line_no) + ": " + reason);
  }
  int64_t bad() const { return bad_; }
  const std::string& file() const { return file_; }

 private:
  std::string file_;
  TraceOptions opt_;
  int64_t bad_ = 0;
};

// A number of seconds as %g writes it (1e+300, not 300 digits).
std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

// Sorts by submit time, rebases to the first submit, keeps the first N. An
// error naming the file when the submit times span more than kMaxTraceSeconds
// (each loader bounds every duration by it row by row).
Status Finish(Trace* t, const TraceOptions& opt, const std::string& file) {
  // A trace without a job simulated nothing and reported slowdown 0 and JCT 0.
  if (t->jobs.empty())
    return Status::Error(file + ": no jobs" +
                         (t->bad_lines > 0 ? " (" + std::to_string(t->bad_lines) + " malformed lines skipped)" : "") +
                         (t->filtered > 0 ? " (" + std::to_string(t->filtered) + " rows are not GPU jobs)" : ""));
  std::stable_sort(t->jobs.begin(), t->jobs.end(), [](const TraceJob& a, const TraceJob& b) {
    return a.submit_s != b.submit_s ? a.submit_s < b.submit_s : a.id < b.id;
  });
  const double t0 = t->jobs.front().submit_s;  // non-empty: checked above
  if (t->jobs.back().submit_s - t0 > kMaxTraceSeconds)
    return Status::Error(file + ": submit times span " + Seconds(t->jobs.back().submit_s - t0) + " s (jobs " +
                         std::to_string(t->jobs.front().id) + " and " + std::to_string(t->jobs.back().id) +
                         "), more than " + std::to_string(static_cast<int64_t>(kMaxTraceSeconds)) + " s");
  for (auto& j : t->jobs) j.submit_s -= t0;
  if (opt.max_jobs >= 0 && static_cast<int64_t>(t->jobs.size()) > opt.max_jobs)
    t->jobs.resize(static_cast<size_t>(opt.max_jobs));
  return Status::Ok();
}

// Why a run time longer than kMaxTraceSeconds is refused.
const std::string kTooLong = " is more than " + std::to_string(static_cast<int64_t>(kMaxTraceSeconds)) + " s";

std::string Quote(std::string_view s) { return "'" + std::string(s) + "'"; }

Result<std::vector<std::string_view>> ReadLines(const std::string& path, std::string* storage) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  *storage = std::move(*text);
  // Counted before the line views are made (16 bytes each).
  const size_t n = static_cast<size_t>(std::count(storage->begin(), storage->end(), '\n')) +
                   (!storage->empty() && storage->back() != '\n' ? 1 : 0);  // as Lines counts them
  if (n > kMaxTraceLines)
    return Status::Error(BaseName(path) + ": " + std::to_string(n) + " lines, more than " +
                         std::to_string(kMaxTraceLines));
  auto lines = Lines(*storage);
  if (lines.empty()) return Status::Error(BaseName(path) + ": empty file");
  return lines;
}

// The columns `names` of a CSV header line, by index; an error naming the file
// and every wanted column when one is missing.
Result<std::vector<int>> RequireColumns(std::string_view header_line, const std::vector<std::string>& names,
                                        const RowSink& sink) {
  auto header = Split(header_line, ',');
  std::vector<int> at;
  std::string want;
  for (const auto& n : names) {
    at.push_back(ColumnIndex(header, n));
    want += (want.empty() ? "" : ",") + n;
  }
  if (std::any_of(at.begin(), at.end(), [](int c) { return c < 0; }))
    return Status::Error(sink.file() + ": line 1: want columns " + want);
  return at;
}

// Calls row(line_no, fields) for every non-empty line after the header; a line
// too short for the wanted columns `at` is a bad line. row returns sink.Bad's
// Status for a line it rejects (an error unless bad lines are skipped).
template <typename Row>
Status ForEachCsvRow(const std::vector<std::string_view>& lines, const std::vector<int>& at, RowSink& sink,
                     Row&& row) {
  const size_t header_fields = Split(lines[0], ',').size();
  const size_t need = static_cast<size_t>(*std::max_element(at.begin(), at.end()));
  for (size_t ln = 1; ln < lines.size(); ++ln) {
    if (lines[ln].empty()) continue;
    auto f = Split(lines[ln], ',');
    if (f.size() <= need) {
      RETURN_IF_ERROR(sink.Bad(ln + 1, "has " + std::to_string(f.size()) + " fields, want " +
                                           std::to_string(header_fields)));
      continue;
    }
    RETURN_IF_ERROR(row(ln + 1, f));
  }
  return Status::Ok();
}

}  // namespace

std::optional<int64_t> ParseTimestamp(std::string_view s) {
  // YYYY-MM-DD HH:MM:SS
  if (s.size() != 19 || s[4] != '-' || s[7] != '-' || s[10] != ' ' || s[13] != ':' || s[16] != ':')
    return std::nullopt;
  auto num = [&](size_t pos, size_t len) { return ParseInt(s.substr(pos, len)); };
  auto y = num(0, 4), mo = num(5, 2), d = num(8, 2), h = num(11, 2), mi = num(14, 2), se = num(17, 2);
  if (!y || !mo || !d || !h || !mi || !se) return std::nullopt;
  if (*mo < 1 || *mo > 12 || *d < 1 || *d > 31 || *h > 23 || *mi > 59 || *se > 60 || *h < 0 ||
      *mi < 0 || *se < 0)
    return std::nullopt;
  // Days from civil (Howard Hinnant's algorithm).
  long long yy = *y - (*mo <= 2);
  long long era = (yy >= 0 ? yy : yy - 399) / 400;
  long long yoe = yy - era * 400;
  long long mp = (*mo + 9) % 12;
  long long doy = (153 * mp + 2) / 5 + *d - 1;
  long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  long long days = era * 146097 + doe - 719468;
  return days * 86400 + *h * 3600 + *mi * 60 + *se;
}

Result<Trace> LoadPhilly(const std::string& path, const TraceOptions& opt) {
  std::string storage;
  ASSIGN_OR_RETURN(auto lines, ReadLines(path, &storage));
  RowSink sink(BaseName(path), opt);
  ASSIGN_OR_RETURN(auto at, RequireColumns(lines[0], {"timestamp", "duration", "num_gpus"}, sink));
  const int c_ts = at[0], c_d = at[1], c_g = at[2];
  Trace t;
  t.name = "philly";
  RETURN_IF_ERROR(ForEachCsvRow(lines, at, sink, [&](size_t line_no, const auto& f) {
    auto ts = ParseTimestamp(f[c_ts]);
    auto d = ParseDouble(f[c_d]);
    auto g = ParseInt(f[c_g]);
    if (!ts) return sink.Bad(line_no, "timestamp " + Quote(f[c_ts]) + " is not YYYY-MM-DD HH:MM:SS");
    if (!d || *d <= 0) return sink.Bad(line_no, "duration " + Quote(f[c_d]) + " is not a positive number");
    if (*d > kMaxTraceSeconds) return sink.Bad(line_no, "duration " + Quote(f[c_d]) + kTooLong);
    if (!g || *g < 1 || *g > 100000) return sink.Bad(line_no, "num_gpus " + Quote(f[c_g]) + " is not a positive integer");
    t.jobs.push_back({static_cast<int64_t>(line_no - 2), static_cast<double>(*ts), *d, static_cast<int>(*g), 1.0});
    return Status::Ok();
  }));
  t.bad_lines = sink.bad();
  // Philly ran a few thousand GPUs for many virtual clusters; the 82k jobs'
  // mean demand over the trace is ~374 GPUs, so 256 GPUs (load factor 1.46)
  // keep a queue (see docs/simulator.md).
  t.default_cluster = "256x RTX3090";
  RETURN_IF_ERROR(Finish(&t, opt, sink.file()));
  return t;
}

Result<Trace> LoadAlibaba(const std::string& path, const TraceOptions& opt) {
  std::string storage;
  ASSIGN_OR_RETURN(auto lines, ReadLines(path, &storage));
  RowSink sink(BaseName(path), opt);
  ASSIGN_OR_RETURN(auto at, RequireColumns(lines[0], {"num_gpu", "gpu_milli", "creation_time", "deletion_time",
                                                      "scheduled_time"}, sink));
  const int c_n = at[0], c_m = at[1], c_c = at[2], c_del = at[3], c_s = at[4];
  Trace t;
  t.name = "alibaba2023";
  RETURN_IF_ERROR(ForEachCsvRow(lines, at, sink, [&](size_t line_no, const auto& f) {
    auto n = ParseInt(f[c_n]);
    auto milli = ParseInt(f[c_m]);
    auto created = ParseInt(f[c_c]);
    if (!n || *n < 0) return sink.Bad(line_no, "num_gpu " + Quote(f[c_n]) + " is not a non-negative integer");
    if (!milli || *milli < 0 || *milli > 1000) return sink.Bad(line_no, "gpu_milli " + Quote(f[c_m]) + " is not in [0, 1000]");
    if (!created) return sink.Bad(line_no, "creation_time " + Quote(f[c_c]) + " is not an integer");
    // CPU-only pods and pods that never ran (Pending: no scheduled/deletion time) are not GPU jobs.
    if (*n == 0 || *milli == 0 || f[c_del].empty() || f[c_s].empty()) { ++t.filtered; return Status::Ok(); }
    auto deleted = ParseInt(f[c_del]);
    auto sched = ParseInt(f[c_s]);
    if (!deleted || !sched) return sink.Bad(line_no, "deletion_time/scheduled_time are not integers");
    if (*deleted <= *sched) { ++t.filtered; return Status::Ok(); }
    // In doubles: the difference of two int64 can overflow.
    const double run_s = static_cast<double>(*deleted) - static_cast<double>(*sched);
    if (run_s > kMaxTraceSeconds)
      return sink.Bad(line_no, "deletion_time - scheduled_time " + Seconds(run_s) + kTooLong);
    if (*n > 100000) return sink.Bad(line_no, "num_gpu " + Quote(f[c_n]) + " is more than 100000");
    t.jobs.push_back({static_cast<int64_t>(line_no - 2), static_cast<double>(*created), run_s,
                      static_cast<int>(*n), *milli / 1000.0});
    return Status::Ok();
  }));
  t.bad_lines = sink.bad();
  // The replayed pods demand ~71 GPUs at peak against 6,212 in the node list;
  // every 200th node (26 GPUs, load factor ~0.64) makes slot queue (see docs/simulator.md).
  t.default_cluster = "alibaba-nodes:every=200";
  RETURN_IF_ERROR(Finish(&t, opt, sink.file()));
  return t;
}

Result<Trace> LoadGavel(const std::string& path, const std::string& json_path,
                        const TraceOptions& opt) {
  auto json_text = ReadFile(json_path);
  if (!json_text.ok()) return json_text.status();
  nlohmann::json d;
  try {
    d = nlohmann::json::parse(*json_text);
  } catch (const std::exception& e) {
    return Status::Error(BaseName(json_path) + ": " + e.what());
  }
  if (!d.contains("v100") || !d["v100"].is_object())
    return Status::Error(BaseName(json_path) + ": no 'v100' throughputs");
  const auto& v100 = d["v100"];
  std::string storage;
  ASSIGN_OR_RETURN(auto lines, ReadLines(path, &storage));
  RowSink sink(BaseName(path), opt);
  Trace t;
  t.name = "gavel";
  for (size_t ln = 0; ln < lines.size(); ++ln) {
    if (lines[ln].empty()) continue;
    auto f = Split(lines[ln], '\t');
    if (f.size() != 7) { RETURN_IF_ERROR(sink.Bad(ln + 1, "has " + std::to_string(f.size()) + " fields, want 7")); continue; }
    auto steps = ParseDouble(f[4]);
    auto arrival = ParseDouble(f[5]);
    auto scale = ParseInt(f[6]);
    if (!steps || *steps <= 0) { RETURN_IF_ERROR(sink.Bad(ln + 1, "total steps " + Quote(f[4]) + " is not a positive number")); continue; }
    if (!arrival || *arrival < 0) { RETURN_IF_ERROR(sink.Bad(ln + 1, "arrival time " + Quote(f[5]) + " is not a non-negative number")); continue; }
    if (!scale || *scale < 1 || *scale > 1024) { RETURN_IF_ERROR(sink.Bad(ln + 1, "scale factor " + Quote(f[6]) + " is not a positive integer")); continue; }
    auto throughput = [&](long long sc) {
      std::string k = "('" + std::string(f[0]) + "', " + std::to_string(sc) + ")";
      if (v100.contains(k) && v100[k].contains("null") && v100[k]["null"].is_number())
        return v100[k]["null"].get<double>();
      return 0.0;
    };
    std::string key = "('" + std::string(f[0]) + "', " + std::to_string(*scale) + ")";
    double thr = throughput(*scale);
    if (thr <= 0 && *scale > 1) {
      // Gavel measured no multi-GPU throughput for this type (Recommendation):
      // no scaling credit, the one-GPU throughput.
      thr = throughput(1);
      if (thr > 0) ++t.approximated;
    }
    if (thr <= 0) { RETURN_IF_ERROR(sink.Bad(ln + 1, "job type " + Quote(key) + " has no V100 throughput")); continue; }
    // Run time alone = steps / isolated V100 throughput (steps/s) at that scale.
    if (!(*steps / thr > 0)) {  // a throughput so large that the run time underflows to 0
      RETURN_IF_ERROR(sink.Bad(ln + 1, "run time (total steps / V100 throughput) " + Seconds(*steps / thr) +
                                           " is not positive"));
      continue;
    }
    if (!(*steps / thr <= kMaxTraceSeconds)) {
      RETURN_IF_ERROR(sink.Bad(ln + 1, "run time (total steps / V100 throughput) " + Seconds(*steps / thr) + kTooLong));
      continue;
    }
    TraceJob j{static_cast<int64_t>(ln), *arrival, *steps / thr, static_cast<int>(*scale), 1.0};
    j.job_type = std::string(f[0]);
    t.jobs.push_back(std::move(j));
  }
  t.bad_lines = sink.bad();
  t.default_cluster = "32x RTX3090";  // load factor ~4.7: Gavel's trace is a dense backlog
  RETURN_IF_ERROR(Finish(&t, opt, sink.file()));
  return t;
}

void ScaleArrivals(Trace* t, double factor) {
  for (TraceJob& j : t->jobs) j.submit_s /= factor;
}

Trace ResampleArrivals(const Trace& t, uint64_t seed, double block_s, int radius) {
  Trace out = t;
  out.jobs.clear();
  if (t.jobs.empty()) return out;
  const double t0 = t.jobs.front().submit_s;
  auto block_of = [&](const TraceJob& j) { return static_cast<int64_t>((j.submit_s - t0) / block_s); };
  const int64_t blocks = block_of(t.jobs.back()) + 1;
  // Jobs of each source block: [first[b], first[b + 1]) (jobs are sorted by submit).
  std::vector<size_t> first(static_cast<size_t>(blocks) + 1, t.jobs.size());
  for (size_t i = t.jobs.size(); i-- > 0;) first[static_cast<size_t>(block_of(t.jobs[i]))] = i;
  for (int64_t b = blocks - 1; b >= 0; --b) first[b] = std::min(first[b], first[b + 1]);
  for (int64_t i = 0; i < blocks; ++i) {
    int64_t j = i;
    if (blocks > 1) {
      const int64_t lo = std::max<int64_t>(0, i - radius), hi = std::min<int64_t>(blocks - 1, i + radius);
      uint64_t z = seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(i) * 0xD1B54A32D192ED03ULL + 0x5EEDB10CULL;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
      z ^= z >> 31;
      j = lo + static_cast<int64_t>(z % static_cast<uint64_t>(hi - lo + 1));
    }
    for (size_t k = first[j]; k < first[j + 1]; ++k) {
      TraceJob c = t.jobs[k];
      c.source_id = t.jobs[k].source_id >= 0 ? t.jobs[k].source_id : t.jobs[k].id;
      c.submit_s += static_cast<double>(i - j) * block_s;
      out.jobs.push_back(std::move(c));
    }
  }
  std::stable_sort(out.jobs.begin(), out.jobs.end(),
                   [](const TraceJob& a, const TraceJob& b) { return a.submit_s < b.submit_s; });
  const double s0 = out.jobs.empty() ? 0 : out.jobs.front().submit_s;
  for (size_t i = 0; i < out.jobs.size(); ++i) {
    out.jobs[i].id = static_cast<int64_t>(i);
    out.jobs[i].submit_s -= s0;
  }
  return out;
}

Result<Trace> LoadGenericCsv(const std::string& path, const TraceOptions& opt) {
  std::string storage;
  ASSIGN_OR_RETURN(auto lines, ReadLines(path, &storage));
  RowSink sink(BaseName(path), opt);
  size_t first = 0;
  while (first < lines.size() && (lines[first].empty() || lines[first][0] == '#')) ++first;
  if (first == lines.size()) return Status::Error(sink.file() + ": no header");
  auto header = Split(lines[first], ',');
  int c_s = ColumnIndex(header, "submit_s"), c_d = ColumnIndex(header, "duration_s"),
      c_g = ColumnIndex(header, "num_gpus"), c_id = ColumnIndex(header, "job_id"),
      c_r = ColumnIndex(header, "gpu_request");
  if (c_s < 0 || c_d < 0 || c_g < 0)
    return Status::Error(sink.file() + ": line " + std::to_string(first + 1) +
                         ": want columns submit_s,duration_s,num_gpus");
  int need = std::max({c_s, c_d, c_g, c_id, c_r});
  Trace t;
  t.name = BaseName(path);
  int64_t row = 0;
  std::unordered_map<int64_t, size_t> id_line;  // job_id -> the line that gave it
  for (size_t ln = first + 1; ln < lines.size(); ++ln) {
    if (lines[ln].empty() || lines[ln][0] == '#') continue;
    auto f = Split(lines[ln], ',');
    if (static_cast<int>(f.size()) <= need) {
      RETURN_IF_ERROR(sink.Bad(ln + 1, "has " + std::to_string(f.size()) + " fields, want " +
                                           std::to_string(header.size())));
      continue;
    }
    auto s = ParseDouble(f[c_s]);
    auto d = ParseDouble(f[c_d]);
    auto g = ParseInt(f[c_g]);
    if (!s || *s < 0) { RETURN_IF_ERROR(sink.Bad(ln + 1, "submit_s " + Quote(f[c_s]) + " is not a non-negative number")); continue; }
    if (!d || *d <= 0) { RETURN_IF_ERROR(sink.Bad(ln + 1, "duration_s " + Quote(f[c_d]) + " is not a positive number")); continue; }
    if (*d > kMaxTraceSeconds) { RETURN_IF_ERROR(sink.Bad(ln + 1, "duration_s " + Quote(f[c_d]) + kTooLong)); continue; }
    if (!g || *g < 1 || *g > 100000) { RETURN_IF_ERROR(sink.Bad(ln + 1, "num_gpus " + Quote(f[c_g]) + " is not a positive integer")); continue; }
    TraceJob j{row++, *s, *d, static_cast<int>(*g), 1.0};
    if (c_id >= 0) {
      auto id = ParseInt(f[c_id]);
      if (!id) { RETURN_IF_ERROR(sink.Bad(ln + 1, "job_id " + Quote(f[c_id]) + " is not an integer")); continue; }
      // Ids name jobs in jobs.csv and seed their draws: two jobs with one id were one job twice.
      if (auto it = id_line.find(*id); it != id_line.end()) {
        RETURN_IF_ERROR(sink.Bad(ln + 1, "job_id " + Quote(f[c_id]) + " repeats line " + std::to_string(it->second)));
        continue;
      }
      j.id = *id;
    }
    if (c_r >= 0) {
      auto r = ParseDouble(f[c_r]);
      if (!r || *r <= 0 || *r > 1) { RETURN_IF_ERROR(sink.Bad(ln + 1, "gpu_request " + Quote(f[c_r]) + " is not in (0, 1]")); continue; }
      j.gpu_request = *r;
    }
    if (c_id >= 0) id_line.emplace(j.id, ln + 1);
    t.jobs.push_back(j);
  }
  t.bad_lines = sink.bad();
  t.default_cluster = "8x RTX3090";
  RETURN_IF_ERROR(Finish(&t, opt, sink.file()));
  return t;
}

Result<Trace> LoadTrace(const std::string& name_or_path, const std::string& data_dir,
                        const TraceOptions& opt) {
  if (name_or_path == "philly") return LoadPhilly(data_dir + "/philly/philly.csv", opt);
  if (name_or_path == "alibaba2023")
    return LoadAlibaba(data_dir + "/alibaba-gpu-v2023/openb_pod_list_default.csv", opt);
  if (name_or_path == "gavel")
    return LoadGavel(data_dir + "/gavel/msr_seed0_6214e9.trace",
                     data_dir + "/gavel/simulation_throughputs.json", opt);
  if (name_or_path.find('/') == std::string::npos && name_or_path.find('.') == std::string::npos)
    return Status::Error("unknown trace '" + name_or_path +
                         "': want philly, alibaba2023, gavel, or a path to a CSV");
  return LoadGenericCsv(name_or_path, opt);
}

}  // namespace gpucast::sim
