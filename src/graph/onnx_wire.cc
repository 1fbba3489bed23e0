#include "graph/onnx_wire.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <algorithm>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "graph/param_ties.h"
#include "util/checked.h"

namespace gpucast {
namespace {

using google::protobuf::io::CodedInputStream;

// Wire types.
constexpr uint32_t kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;
// Nesting of graphs inside node attributes (If/Loop bodies) accepted at most,
// whatever the limits say (the filter recurses once per level).
constexpr int kMaxGraphDepth = 32;

// ONNX field numbers (onnx.proto).
namespace model { constexpr uint32_t kGraph = 7, kTrainingInfo = 20, kFunctions = 25; }
// FunctionProto: node, and attribute_proto (ONNX 1.13, IR 9: attribute defaults).
namespace function { constexpr uint32_t kNode = 7, kAttributeProto = 11; }
namespace graph {
constexpr uint32_t kNode = 1, kInitializer = 5, kInput = 11, kOutput = 12, kValueInfo = 13, kSparseInitializer = 15;
}
namespace node { constexpr uint32_t kAttribute = 5; }
namespace attr {
constexpr uint32_t kT = 5, kG = 6, kTensors = 10, kGraphs = 11, kSparseTensor = 22,
                   kSparseTensors = 23;
}
namespace sparse { constexpr uint32_t kValues = 1, kIndices = 2; }
namespace tensor {
constexpr uint32_t kDims = 1, kDataType = 2, kRawData = 9;
// float_data, int32_data, string_data, int64_data, raw_data, double_data, uint64_data.
bool IsData(uint32_t f) { return f == 4 || f == 5 || f == 6 || f == 7 || f == 9 || f == 10 || f == 11; }
}  // namespace tensor

void AppendVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// Reads `n` bytes at offset `pos` of the input (from where the walk began)
// into dst; false if it cannot. Lets the filter sample a payload it skips.
using Peek = std::function<bool(int64_t pos, size_t n, char* dst)>;

// Large rank-2 initializer payloads sampled per model (param_ties.h): 32 reads
// of one element each, so a file of many large matrices stays bounded.
constexpr int kMaxSampledMatrices = 4096;

// Reads one varint at s[*pos], advancing *pos; false at the end or if malformed.
bool VarintAt(std::string_view s, size_t* pos, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64 && *pos < s.size(); shift += 7) {
    unsigned char b = static_cast<unsigned char>(s[(*pos)++]);
    *v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

class Filter {
 public:
  Filter(CodedInputStream* in, int64_t total_size, const WireLimits& limits, Peek peek)
      : in_(in), total_(total_size), limits_(limits), peek_(std::move(peek)) {}

  // Reads a whole ModelProto up to the end of the input.
  bool Model(std::string* out) {
    while (uint32_t tag = in_->ReadTag()) {
      uint32_t field = tag >> 3;
      if (field == model::kGraph && WireType(tag) == kLengthDelimited) {
        if (!Nested(tag, out, [&](std::string* o) { return Graph(o, 0); })) return false;
      } else if (field == model::kTrainingInfo && WireType(tag) == kLengthDelimited) {
        if (!SkipField(tag)) return false;
      } else if (field == model::kFunctions && WireType(tag) == kLengthDelimited) {
        if (!Nested(tag, out, [&](std::string* o) { return Function(o); })) return false;
      } else if (!CopyField(tag, out)) {
        return false;
      }
    }
    if (!in_->ConsumedEntireMessage()) return Fail("not an ONNX model (malformed protobuf)");
    return true;
  }

  const std::string& error() const { return error_; }
  LoadFailure failure() const { return failure_; }

 private:
  static uint32_t WireType(uint32_t tag) { return tag & 7; }

  bool Fail(const std::string& m, LoadFailure kind = LoadFailure::kNotAModel) {
    if (error_.empty()) {
      error_ = m;
      failure_ = kind;
    }
    return false;
  }

  // Counts `n` kept bytes against the limit.
  bool Keep(size_t n) {
    kept_ += static_cast<int64_t>(n);
    if (limits_.max_kept_bytes > 0 && kept_ > limits_.max_kept_bytes) {
      return Fail("graph too large: more than " + std::to_string(limits_.max_kept_bytes) +
                      " bytes without weights",
                  LoadFailure::kTooLarge);
    }
    return true;
  }

  // Reads a length prefix and checks it against the bytes left in the input.
  bool ReadLength(uint32_t* len) {
    if (!in_->ReadVarint32(len)) return Fail("truncated file");
    int64_t left = total_ - in_->CurrentPosition();
    if (static_cast<int64_t>(*len) > left || *len > static_cast<uint32_t>(INT_MAX)) {
      return Fail("truncated file");
    }
    return true;
  }

  // Copies the value of one field whose tag was just read.
  bool CopyField(uint32_t tag, std::string* out) {
    AppendVarint(out, tag);
    // Length-delimited values are counted before they are read (CopyValue).
    const size_t before = out->size();
    return CopyValue(tag, out) && (WireType(tag) == kLengthDelimited || Keep(out->size() - before + 1));
  }

  bool CopyValue(uint32_t tag, std::string* out) {
    switch (WireType(tag)) {
      case kVarint: {
        uint64_t v;
        if (!in_->ReadVarint64(&v)) return Fail("truncated file");
        AppendVarint(out, v);
        return true;
      }
      case kFixed64: {
        uint64_t v;
        if (!in_->ReadLittleEndian64(&v)) return Fail("truncated file");
        for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
        return true;
      }
      case kFixed32: {
        uint32_t v;
        if (!in_->ReadLittleEndian32(&v)) return Fail("truncated file");
        for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
        return true;
      }
      case kLengthDelimited: {
        uint32_t len;
        if (!ReadLength(&len) || !Keep(len)) return false;
        AppendVarint(out, len);
        std::string bytes;
        if (!in_->ReadString(&bytes, static_cast<int>(len))) return Fail("truncated file");
        out->append(bytes);
        return true;
      }
      default:
        return Fail("not an ONNX model (malformed protobuf)");
    }
  }

  // Skips the value of one field whose tag was just read (without reading it
  // when the stream can seek).
  bool SkipField(uint32_t tag) {
    if (WireType(tag) != kLengthDelimited) {
      std::string sink;
      return CopyField(tag, &sink);
    }
    uint32_t len;
    if (!ReadLength(&len)) return false;
    if (!in_->Skip(static_cast<int>(len))) return Fail("truncated file");
    return true;
  }

  // Filters a length-delimited sub-message with `inner` and appends it.
  bool Nested(uint32_t tag, std::string* out, const std::function<bool(std::string*)>& inner) {
    uint32_t len;
    if (!ReadLength(&len)) return false;
    auto limit = in_->PushLimit(static_cast<int>(len));
    std::string sub;
    if (!inner(&sub)) return false;
    if (in_->BytesUntilLimit() != 0 || !in_->ConsumedEntireMessage()) {
      return Fail("not an ONNX model (malformed protobuf)");
    }
    in_->PopLimit(limit);
    AppendVarint(out, tag);
    AppendVarint(out, sub.size());
    out->append(sub);
    return true;
  }

  // Counts one entry of a repeated field against the limit (and the deadline,
  // now and then: walking millions of small entries takes time too).
  bool Entry() {
    ++entries_;
    if (limits_.max_entries > 0 && entries_ > limits_.max_entries) {
      return Fail("graph too large: more than " + std::to_string(limits_.max_entries) +
                      " entries (nodes, initializers, inputs, outputs, value_info and attributes), counting subgraphs",
                  LoadFailure::kTooManyEntries);
    }
    if (entries_ % 4096 == 0 && std::chrono::steady_clock::now() > limits_.deadline) {
      return Fail("analysis time limit reached while reading the graph", LoadFailure::kTimeout);
    }
    return true;
  }

  bool Graph(std::string* out, int depth) {
    const int max_depth = std::min(kMaxGraphDepth, limits_.max_graph_depth);
    if (depth > max_depth) {
      return Fail("subgraphs nested deeper than " + std::to_string(max_depth) + " levels", LoadFailure::kTooDeep);
    }
    while (uint32_t tag = in_->ReadTag()) {
      uint32_t field = tag >> 3;
      bool ld = WireType(tag) == kLengthDelimited;
      if (ld && (field == graph::kNode || field == graph::kInitializer || field == graph::kSparseInitializer ||
                 field == graph::kInput || field == graph::kOutput || field == graph::kValueInfo) &&
          !Entry()) {
        return false;
      }
      bool ok;
      if (ld && field == graph::kValueInfo) {
        ok = SkipField(tag);
      } else if (ld && field == graph::kInitializer) {
        ok = Nested(tag, out, [&](std::string* o) { return Tensor(o, /*sample=*/depth == 0); });
      } else if (ld && field == graph::kSparseInitializer) {
        ok = Nested(tag, out, [&](std::string* o) { return Sparse(o); });
      } else if (ld && field == graph::kNode) {
        ok = Nested(tag, out, [&](std::string* o) { return Node(o, depth); });
      } else {
        ok = CopyField(tag, out);
      }
      if (!ok) return false;
    }
    return true;
  }

  // A model-local function: its nodes as a graph's (counted, tensors of
  // Constant attributes without large payloads), its attribute defaults as
  // attributes.
  bool Function(std::string* out) {
    while (uint32_t tag = in_->ReadTag()) {
      uint32_t field = tag >> 3;
      bool ld = WireType(tag) == kLengthDelimited;
      bool ok;
      if (ld && field == function::kNode) {
        ok = Entry() && Nested(tag, out, [&](std::string* o) { return Node(o, 0); });
      } else if (ld && field == function::kAttributeProto) {
        ok = Entry() && Nested(tag, out, [&](std::string* o) { return Attribute(o, 0); });
      } else {
        ok = CopyField(tag, out);
      }
      if (!ok) return false;
    }
    return true;
  }

  bool Node(std::string* out, int depth) {
    ++nodes_;
    if (limits_.max_nodes > 0 && nodes_ > limits_.max_nodes) {
      return Fail("graph too large: more than " + std::to_string(limits_.max_nodes) + " nodes, counting subgraphs",
                  LoadFailure::kTooManyNodes);
    }
    if (nodes_ % 1024 == 0 && std::chrono::steady_clock::now() > limits_.deadline) {
      return Fail("analysis time limit reached while reading the graph", LoadFailure::kTimeout);
    }
    while (uint32_t tag = in_->ReadTag()) {
      const bool attribute = (tag >> 3) == node::kAttribute && WireType(tag) == kLengthDelimited;
      if (attribute && !Entry()) return false;
      bool ok = attribute ? Nested(tag, out, [&](std::string* o) { return Attribute(o, depth); })
                          : CopyField(tag, out);
      if (!ok) return false;
    }
    return true;
  }

  bool Attribute(std::string* out, int depth) {
    while (uint32_t tag = in_->ReadTag()) {
      uint32_t field = tag >> 3;
      bool ld = WireType(tag) == kLengthDelimited;
      bool ok;
      if (ld && (field == attr::kT || field == attr::kTensors)) {
        ok = Nested(tag, out, [&](std::string* o) { return Tensor(o); });
      } else if (ld && (field == attr::kG || field == attr::kGraphs)) {
        ok = Nested(tag, out, [&](std::string* o) { return Graph(o, depth + 1); });
      } else if (ld && (field == attr::kSparseTensor || field == attr::kSparseTensors)) {
        ok = Nested(tag, out, [&](std::string* o) { return Sparse(o); });
      } else {
        ok = CopyField(tag, out);
      }
      if (!ok) return false;
    }
    return true;
  }

  bool Sparse(std::string* out) {
    while (uint32_t tag = in_->ReadTag()) {
      uint32_t field = tag >> 3;
      bool ok = WireType(tag) == kLengthDelimited &&
                        (field == sparse::kValues || field == sparse::kIndices)
                    ? Nested(tag, out, [&](std::string* o) { return Tensor(o); })
                    : CopyField(tag, out);
      if (!ok) return false;
    }
    return true;
  }

  // A TensorProto: payload fields over the threshold are skipped. Packed
  // payloads are judged by their length prefix; unpacked elements (and
  // string_data) are collected and dropped together if they add up to more.
  // `sample`: a graph's initializer, whose skipped raw_data of a rank-2 float
  // matrix is sampled (MatrixSample, written as field kMatrixSampleField after
  // the tensor's other fields) when its dims and data_type came before it, as
  // every exporter writes them.
  bool Tensor(std::string* out, bool sample = false) {
    std::string unpacked;
    std::vector<int64_t> dims;
    int32_t type = 0;
    std::optional<MatrixSample> matrix;
    while (uint32_t tag = in_->ReadTag()) {
      uint32_t field = tag >> 3;
      bool ok;
      if (!tensor::IsData(field)) {
        const size_t before = out->size();
        ok = CopyField(tag, out);
        if (ok && sample && (field == tensor::kDims || field == tensor::kDataType)) {
          std::string_view v(out->data() + before, out->size() - before);
          size_t pos = 0;
          uint64_t x = 0, len = 0;
          VarintAt(v, &pos, &x);  // the tag
          if (WireType(tag) == kVarint && VarintAt(v, &pos, &x)) {
            if (field == tensor::kDims) dims.push_back(static_cast<int64_t>(x));
            else type = static_cast<int32_t>(x);
          } else if (WireType(tag) == kLengthDelimited && field == tensor::kDims && VarintAt(v, &pos, &len)) {
            while (pos < v.size() && VarintAt(v, &pos, &x)) dims.push_back(static_cast<int64_t>(x));
          }
        }
      } else if (WireType(tag) == kLengthDelimited && field != 6) {
        uint32_t len;
        if (!ReadLength(&len)) return false;
        if (len > kMaxKeptTensorDataBytes) {
          if (sample && field == tensor::kRawData) matrix = SampleSkipped(dims, type, len);
          ok = in_->Skip(static_cast<int>(len)) || Fail("truncated file");
        } else {
          AppendVarint(out, tag);
          AppendVarint(out, len);
          std::string bytes;
          ok = (in_->ReadString(&bytes, static_cast<int>(len)) || Fail("truncated file")) && Keep(bytes.size());
          out->append(bytes);
        }
      } else if (static_cast<int64_t>(unpacked.size()) > kMaxKeptTensorDataBytes) {
        ok = SkipField(tag);
      } else {
        ok = CopyField(tag, &unpacked);
      }
      if (!ok) return false;
    }
    if (static_cast<int64_t>(unpacked.size()) <= kMaxKeptTensorDataBytes) out->append(unpacked);
    if (matrix) {
      const std::string enc = EncodeMatrixSample(*matrix);
      AppendVarint(out, (kMatrixSampleField << 3) | kLengthDelimited);
      AppendVarint(out, enc.size());
      out->append(enc);
      if (!Keep(enc.size() + 4)) return false;
    }
    return true;
  }

  // The sample of the raw_data payload of `len` bytes about to be skipped.
  std::optional<MatrixSample> SampleSkipped(const std::vector<int64_t>& dims, int32_t type, uint32_t len) {
    const size_t elem = MatrixElemBytes(type);
    if (!peek_ || dims.size() != 2 || elem == 0 || sampled_ >= kMaxSampledMatrices) return std::nullopt;
    if (dims[0] < 2 || dims[1] < 2) return std::nullopt;
    std::optional<int64_t> numel = CheckedMul(dims[0], dims[1]);
    std::optional<int64_t> bytes = numel ? CheckedMul(*numel, static_cast<int64_t>(elem)) : std::nullopt;
    if (!bytes || *bytes != static_cast<int64_t>(len)) return std::nullopt;  // so every sampled offset is inside it
    ++sampled_;
    const int64_t start = in_->CurrentPosition();
    return SampleMatrix(dims[0], dims[1], elem, [this, start, elem](int64_t k, char* dst) {
      return peek_(start + k * static_cast<int64_t>(elem), elem, dst);
    });
  }

  CodedInputStream* in_;
  int64_t total_;
  WireLimits limits_;
  int64_t nodes_ = 0;  // nodes entered, in every graph
  int64_t entries_ = 0;  // entries of repeated graph and node fields (Entry)
  int64_t kept_ = 0;   // bytes copied to the output (tags and values)
  std::string error_;
  LoadFailure failure_ = LoadFailure::kNone;
  Peek peek_;        // null: payloads are not sampled
  int sampled_ = 0;  // matrices sampled (kMaxSampledMatrices)
};

// What a file that starts with `head` is, when it is a PyTorch file rather
// than ONNX: a zip archive (torch.save since 1.6, TorchScript's torch.jit.save)
// or a pickle (torch.save's legacy format, pickle protocol 2-5). Neither can
// begin a protobuf message ("PK\3\4" has a field-0 tag; no exporter writes a
// field 32 first, as 0x80 0x02-0x05 would be). "" otherwise.
std::string PyTorchFileKind(std::string_view head) {
  if (head.size() >= 4 && head.substr(0, 4) == std::string_view("PK\x03\x04", 4))
    return "a zip archive (a PyTorch torch.save checkpoint or TorchScript module, .pt/.pth)";
  if (head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x80 && head[1] >= 2 && head[1] <= 5)
    return "a Python pickle (a PyTorch torch.save file in the legacy format, .pt/.pth/.pkl)";
  return "";
}

Result<std::string> Run(google::protobuf::io::ZeroCopyInputStream* stream, int64_t size, const WireLimits& limits,
                        LoadFailure* why, Peek peek) {
  LoadFailure ignored;
  if (!why) why = &ignored;
  *why = LoadFailure::kNotAModel;
  if (size == 0) return Status::Error("empty file");
  {
    const void* data = nullptr;
    int n = 0;
    if (stream->Next(&data, &n) && n > 0) {
      std::string kind = PyTorchFileKind(std::string_view(static_cast<const char*>(data), static_cast<size_t>(n)));
      stream->BackUp(n);
      if (!kind.empty())
        return Status::Error(
            "not an ONNX model but " + kind +
            "; gpucast reads the ONNX graph of a model: export it with tools/gpucast-export (a TorchScript or "
            "pickled module file, or MODULE:FACTORY for the code that builds the model) or torch.onnx.export in "
            "training mode (docs/models.md)");
    }
  }
  if (size >= INT_MAX) return Status::Error("file larger than the 2 GiB protobuf limit");
  CodedInputStream in(stream);
  in.SetTotalBytesLimit(INT_MAX);
  Filter f(&in, size, limits, std::move(peek));
  std::string out;
  if (!f.Model(&out)) {
    *why = f.failure();
    return Status::Error(f.error());
  }
  // A Skip past the end of a file (lseek) succeeds; catch truncation here.
  if (in.CurrentPosition() != size) return Status::Error("truncated file");
  *why = LoadFailure::kNone;
  return out;
}

}  // namespace

Result<std::string> ReadModelBytesWithoutWeights(const std::string& path, const WireLimits& limits,
                                                 LoadFailure* why) {
  if (why) *why = LoadFailure::kNotAModel;
  // O_NONBLOCK: opening a FIFO does not wait for a writer (it is then refused as not a
  // regular file); O_NOCTTY: a terminal is not adopted.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return Status::Error(std::string("cannot open: ") + std::strerror(errno));
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  Result<std::string> r = ReadModelBytesWithoutWeightsFromFd(fd, limits, why);
  ::close(fd);
  return r;
}

Result<std::string> ReadModelBytesWithoutWeightsFromFd(int fd, const WireLimits& limits, LoadFailure* why) {
  if (why) *why = LoadFailure::kNotAModel;
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return Status::Error("not a regular file");
  const off_t base = ::lseek(fd, 0, SEEK_CUR);
  google::protobuf::io::FileInputStream stream(fd);
  Peek peek;
  if (base >= 0)
    peek = [fd, base](int64_t pos, size_t n, char* dst) {
      return ::pread(fd, dst, n, base + static_cast<off_t>(pos)) == static_cast<ssize_t>(n);
    };
  Result<std::string> r = Run(&stream, st.st_size - (base > 0 ? base : 0), limits, why, std::move(peek));
  if (stream.GetErrno() != 0) {
    if (why) *why = LoadFailure::kNotAModel;
    r = Status::Error(std::string("read error: ") + std::strerror(stream.GetErrno()));
  }
  return r;
}

Result<std::string> FilterModelBytesWithoutWeights(std::string_view bytes, const WireLimits& limits,
                                                   LoadFailure* why) {
  if (why) *why = LoadFailure::kNotAModel;
  if (bytes.size() >= static_cast<size_t>(INT_MAX)) {
    return Status::Error("file larger than the 2 GiB protobuf limit");
  }
  google::protobuf::io::ArrayInputStream stream(bytes.data(), static_cast<int>(bytes.size()));
  Peek peek = [bytes](int64_t pos, size_t n, char* dst) {
    if (pos < 0 || static_cast<uint64_t>(pos) + n > bytes.size()) return false;
    std::memcpy(dst, bytes.data() + pos, n);
    return true;
  };
  return Run(&stream, static_cast<int64_t>(bytes.size()), limits, why, std::move(peek));
}

}  // namespace gpucast
