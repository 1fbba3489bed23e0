// The bounded parameter vector of the physical regressors (roofline,
// physics): each parameter lives in [lo, hi] of its definition (any struct
// with `name`, `lo`, `hi`), is searched on a log scale through an unbounded
// coordinate z (NelderMead in nelder_mead.h runs on z), and is saved in the
// predictor file as {"theta": {name: value}, "resid_low", "resid_high"}.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace gpucast {

// z in R -> value in [d.lo, d.hi]: a logistic on the log scale.
template <class Def>
double ThetaFromZ(const Def& d, double z) {
  const double a = std::log(d.lo), b = std::log(d.hi);
  return std::exp(a + (b - a) / (1 + std::exp(-z)));
}

// The inverse of ThetaFromZ; values at or beyond a bound map to a large finite z.
template <class Def>
double ThetaToZ(const Def& d, double v) {
  const double a = std::log(d.lo), b = std::log(d.hi);
  const double s = std::clamp((std::log(v) - a) / (b - a), 1e-9, 1 - 1e-9);
  return std::log(s / (1 - s));
}

template <class Def, size_t N>
std::array<double, N> ThetaFromZ(const Def (&defs)[N], const std::array<double, N>& z) {
  std::array<double, N> t;
  for (size_t i = 0; i < N; ++i) t[i] = ThetaFromZ(defs[i], z[i]);
  return t;
}

template <class Def, size_t N>
nlohmann::json SaveTheta(const Def (&defs)[N], const std::array<double, N>& theta, double resid_low,
                         double resid_high) {
  nlohmann::json t = nlohmann::json::object();
  for (size_t i = 0; i < N; ++i) t[defs[i].name] = theta[i];
  return nlohmann::json{{"theta", t}, {"resid_low", resid_low}, {"resid_high", resid_high}};
}

// Reads what SaveTheta wrote; a value outside its bounds or a missing field
// is an error naming `algo` (and the parameter).
template <class Def, size_t N>
Status LoadTheta(const std::string& algo, const nlohmann::json& j, const Def (&defs)[N], std::array<double, N>* theta,
                 double* resid_low, double* resid_high) {
  try {
    for (size_t i = 0; i < N; ++i) {
      (*theta)[i] = j.at("theta").at(defs[i].name).template get<double>();
      if (!((*theta)[i] >= defs[i].lo * (1 - 1e-9) && (*theta)[i] <= defs[i].hi * (1 + 1e-9)))
        return Status::Error(algo + ": theta '" + defs[i].name + "' outside its bounds");
    }
    *resid_low = j.at("resid_low").template get<double>();
    *resid_high = j.at("resid_high").template get<double>();
  } catch (const nlohmann::json::exception& e) {
    return Status::Error(algo + ": state: " + e.what());
  }
  return Status::Ok();
}

}  // namespace gpucast
