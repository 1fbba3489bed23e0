// XGBoost's C API, loaded on first use. Only fitting the `forest`, `gbm` and
// `mono` regressors calls XGBoost (a fitted forest is a node table that
// predicts without it), so `gpucast predict`, `analyze` and the service's
// predictions never load libxgboost and the libraries it pulls in (libdmlc,
// libgomp): about 5 ms of every process start (docs/performance.md).
//
// Each function forwards to the library's function of the same name (the
// XGB prefix dropped). The first call dlopen()s the library (its SONAME, read
// from the library found at configure time); when that fails, every call
// returns -1 and GetLastError() names the library and dlerror()'s reason.
// Thread-safe.
#pragma once

#include <xgboost/c_api.h>

namespace gpucast::xgb {

const char* GetLastError();
int DMatrixCreateFromMat(const float* data, bst_ulong nrow, bst_ulong ncol, float missing, DMatrixHandle* out);
int DMatrixFree(DMatrixHandle handle);
int DMatrixSetFloatInfo(DMatrixHandle handle, const char* field, const float* array, bst_ulong len);
int BoosterCreate(const DMatrixHandle dmats[], bst_ulong len, BoosterHandle* out);
int BoosterFree(BoosterHandle handle);
int BoosterSetParam(BoosterHandle handle, const char* name, const char* value);
int BoosterUpdateOneIter(BoosterHandle handle, int iter, DMatrixHandle dtrain);
int BoosterPredictFromDMatrix(BoosterHandle handle, DMatrixHandle dmat, const char* config,
                              const bst_ulong** out_shape, bst_ulong* out_dim, const float** out_result);
int BoosterLoadModelFromBuffer(BoosterHandle handle, const void* buf, bst_ulong len);
int BoosterSaveModelToBuffer(BoosterHandle handle, const char* config, bst_ulong* out_len, const char** out_dptr);

// The file dlopen() is given (GPUCAST_XGBOOST_SONAME, "libxgboost.so.0" on Debian 12).
const char* LibraryName();

}  // namespace gpucast::xgb
