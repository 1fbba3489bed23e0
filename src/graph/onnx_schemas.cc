#include "graph/onnx_schemas.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include <onnx/defs/operator_sets.h>

#include "graph/graph.h"

namespace gpucast {
namespace {

struct SchemaRow {
  const char* op_type;
  int since_version;
  onnx::OpSchema (*make)();
};

// One row per `class ONNX_OPERATOR_SET_SCHEMA_CLASS_NAME(Onnx, N, Op);` of the
// installed operator_sets.h (src/graph/CMakeLists.txt generates the list).
#define GPUCAST_OPSET_ROW(op, ver) \
  {#op, ver, &onnx::GetOpSchema<onnx::ONNX_OPERATOR_SET_SCHEMA_CLASS_NAME(Onnx, ver, op)>},
const SchemaRow kRows[] = {
#include "onnx_opset_table.inc"
};
#undef GPUCAST_OPSET_ROW

class LazySchemas {
 public:
  LazySchemas() {
    for (const SchemaRow& r : kRows) by_op_[r.op_type].push_back(&r);
    for (auto& [op, rows] : by_op_)
      std::sort(rows.begin(), rows.end(),
                [](const SchemaRow* a, const SchemaRow* b) { return a->since_version < b->since_version; });
  }

  const onnx::OpSchema* Find(const std::string& op_type, int version) {
    auto it = by_op_.find(op_type);
    if (it == by_op_.end()) return nullptr;
    const SchemaRow* row = nullptr;
    for (const SchemaRow* r : it->second)
      if (r->since_version <= version) row = r;
    if (!row) return nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    std::unique_ptr<onnx::OpSchema>& s = built_[row];
    if (!s) {
      s = std::make_unique<onnx::OpSchema>(row->make());
      s->Finalize();
    }
    return s.get();
  }

 private:
  std::map<std::string_view, std::vector<const SchemaRow*>> by_op_;
  std::mutex mu_;
  std::map<const SchemaRow*, std::unique_ptr<onnx::OpSchema>> built_;
};

LazySchemas& Lazy() {
  static LazySchemas* lazy = new LazySchemas();  // never destroyed: schemas outlive every graph
  return *lazy;
}

}  // namespace

const onnx::OpSchema* FindOpSchema(const std::string& op_type, int version, const std::string& domain) {
  if (IsDefaultDomain(domain)) return Lazy().Find(op_type, version);
  // A domain libonnx does not know has no schemas: do not build the registry to find that out.
  if (!onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().count(domain)) return nullptr;
  return onnx::OpSchemaRegistry::Schema(op_type, version, domain);
}

std::vector<std::pair<std::string, int>> LazyOpSchemaVersions() {
  std::vector<std::pair<std::string, int>> out;
  for (const SchemaRow& r : kRows) out.emplace_back(r.op_type, r.since_version);
  return out;
}

}  // namespace gpucast
