#include "predict/xgb_api.h"

#include <dlfcn.h>

#include <string>

#ifndef GPUCAST_XGBOOST_SONAME
#define GPUCAST_XGBOOST_SONAME "libxgboost.so.0"
#endif

namespace gpucast::xgb {
namespace {

struct Api {
  decltype(&::XGBGetLastError) GetLastError = nullptr;
  decltype(&::XGDMatrixCreateFromMat) DMatrixCreateFromMat = nullptr;
  decltype(&::XGDMatrixFree) DMatrixFree = nullptr;
  decltype(&::XGDMatrixSetFloatInfo) DMatrixSetFloatInfo = nullptr;
  decltype(&::XGBoosterCreate) BoosterCreate = nullptr;
  decltype(&::XGBoosterFree) BoosterFree = nullptr;
  decltype(&::XGBoosterSetParam) BoosterSetParam = nullptr;
  decltype(&::XGBoosterUpdateOneIter) BoosterUpdateOneIter = nullptr;
  decltype(&::XGBoosterPredictFromDMatrix) BoosterPredictFromDMatrix = nullptr;
  decltype(&::XGBoosterLoadModelFromBuffer) BoosterLoadModelFromBuffer = nullptr;
  decltype(&::XGBoosterSaveModelToBuffer) BoosterSaveModelToBuffer = nullptr;
  std::string error;  // set when the library or a symbol could not be loaded
};

template <class F>
bool Resolve(void* lib, const char* name, F* out, std::string* error) {
  *out = reinterpret_cast<F>(::dlsym(lib, name));
  if (!*out && error->empty()) *error = std::string(GPUCAST_XGBOOST_SONAME) + ": no symbol " + name;
  return *out != nullptr;
}

const Api& Load() {
  static const Api api = [] {
    Api a;
    void* lib = ::dlopen(GPUCAST_XGBOOST_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* why = ::dlerror();
      a.error = std::string("cannot load XGBoost (") + GPUCAST_XGBOOST_SONAME + ", Debian package libxgboost0): " +
                (why ? why : "unknown reason");
      return a;
    }
    bool ok = Resolve(lib, "XGBGetLastError", &a.GetLastError, &a.error) &&
              Resolve(lib, "XGDMatrixCreateFromMat", &a.DMatrixCreateFromMat, &a.error) &&
              Resolve(lib, "XGDMatrixFree", &a.DMatrixFree, &a.error) &&
              Resolve(lib, "XGDMatrixSetFloatInfo", &a.DMatrixSetFloatInfo, &a.error) &&
              Resolve(lib, "XGBoosterCreate", &a.BoosterCreate, &a.error) &&
              Resolve(lib, "XGBoosterFree", &a.BoosterFree, &a.error) &&
              Resolve(lib, "XGBoosterSetParam", &a.BoosterSetParam, &a.error) &&
              Resolve(lib, "XGBoosterUpdateOneIter", &a.BoosterUpdateOneIter, &a.error) &&
              Resolve(lib, "XGBoosterPredictFromDMatrix", &a.BoosterPredictFromDMatrix, &a.error) &&
              Resolve(lib, "XGBoosterLoadModelFromBuffer", &a.BoosterLoadModelFromBuffer, &a.error) &&
              Resolve(lib, "XGBoosterSaveModelToBuffer", &a.BoosterSaveModelToBuffer, &a.error);
    if (!ok) a = Api{.error = a.error};  // all or nothing
    return a;
  }();
  return api;
}

}  // namespace

const char* LibraryName() { return GPUCAST_XGBOOST_SONAME; }

const char* GetLastError() {
  const Api& a = Load();
  return a.error.empty() ? a.GetLastError() : a.error.c_str();
}

// Every forwarder: -1 (GetLastError says why) when the library did not load.
#define GPUCAST_XGB_FORWARD(name, ...) \
  const Api& a = Load();               \
  return a.error.empty() ? a.name(__VA_ARGS__) : -1

int DMatrixCreateFromMat(const float* data, bst_ulong nrow, bst_ulong ncol, float missing, DMatrixHandle* out) {
  GPUCAST_XGB_FORWARD(DMatrixCreateFromMat, data, nrow, ncol, missing, out);
}
int DMatrixFree(DMatrixHandle handle) { GPUCAST_XGB_FORWARD(DMatrixFree, handle); }
int DMatrixSetFloatInfo(DMatrixHandle handle, const char* field, const float* array, bst_ulong len) {
  GPUCAST_XGB_FORWARD(DMatrixSetFloatInfo, handle, field, array, len);
}
int BoosterCreate(const DMatrixHandle dmats[], bst_ulong len, BoosterHandle* out) {
  GPUCAST_XGB_FORWARD(BoosterCreate, dmats, len, out);
}
int BoosterFree(BoosterHandle handle) { GPUCAST_XGB_FORWARD(BoosterFree, handle); }
int BoosterSetParam(BoosterHandle handle, const char* name, const char* value) {
  GPUCAST_XGB_FORWARD(BoosterSetParam, handle, name, value);
}
int BoosterUpdateOneIter(BoosterHandle handle, int iter, DMatrixHandle dtrain) {
  GPUCAST_XGB_FORWARD(BoosterUpdateOneIter, handle, iter, dtrain);
}
int BoosterPredictFromDMatrix(BoosterHandle handle, DMatrixHandle dmat, const char* config,
                              const bst_ulong** out_shape, bst_ulong* out_dim, const float** out_result) {
  GPUCAST_XGB_FORWARD(BoosterPredictFromDMatrix, handle, dmat, config, out_shape, out_dim, out_result);
}
int BoosterLoadModelFromBuffer(BoosterHandle handle, const void* buf, bst_ulong len) {
  GPUCAST_XGB_FORWARD(BoosterLoadModelFromBuffer, handle, buf, len);
}
int BoosterSaveModelToBuffer(BoosterHandle handle, const char* config, bst_ulong* out_len, const char** out_dptr) {
  GPUCAST_XGB_FORWARD(BoosterSaveModelToBuffer, handle, config, out_len, out_dptr);
}

#undef GPUCAST_XGB_FORWARD

}  // namespace gpucast::xgb
