// Nelder-Mead minimisation over a fixed-size parameter array, shared by the
// physical regressors (roofline, physics). Standard coefficients: reflection 1,
// expansion 2, contraction 0.5, shrink 0.5.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>

namespace gpucast {

// Minimises f from x0 (initial simplex: x0 plus `step` along each axis). Stops
// after `max_evals` evaluations of f, or when the simplex's values span less
// than `tol`. Returns the best point seen in the final simplex.
template <size_t N, class F>
std::array<double, N> NelderMead(F f, std::array<double, N> x0, double step, int max_evals, double tol) {
  using Point = std::array<double, N>;
  constexpr int n = static_cast<int>(N);
  std::array<Point, N + 1> p;
  std::array<double, N + 1> v;
  for (int i = 0; i <= n; ++i) {
    p[i] = x0;
    if (i > 0) p[i][i - 1] += step;
    v[i] = f(p[i]);
  }
  int evals = n + 1;
  while (evals < max_evals) {
    std::array<int, N + 1> o;
    for (int i = 0; i <= n; ++i) o[i] = i;
    std::sort(o.begin(), o.end(), [&](int a, int b) { return v[a] < v[b]; });
    const int best = o[0], worst = o[n], second = o[n - 1];
    if (v[worst] - v[best] < tol) break;
    Point c{};
    for (int i = 0; i < n; ++i)
      for (int d = 0; d < n; ++d) c[d] += p[o[i]][d] / n;
    auto along = [&](double k) {
      Point x;
      for (int d = 0; d < n; ++d) x[d] = c[d] + k * (p[worst][d] - c[d]);
      return x;
    };
    Point xr = along(-1);
    double fr = f(xr);
    ++evals;
    if (fr < v[best]) {
      Point xe = along(-2);
      double fe = f(xe);
      ++evals;
      if (fe < fr) p[worst] = xe, v[worst] = fe;
      else p[worst] = xr, v[worst] = fr;
    } else if (fr < v[second]) {
      p[worst] = xr, v[worst] = fr;
    } else {
      Point xc = fr < v[worst] ? along(-0.5) : along(0.5);
      double fc = f(xc);
      ++evals;
      if (fc < std::min(fr, v[worst])) {
        p[worst] = xc, v[worst] = fc;
      } else {  // shrink towards the best
        for (int i = 0; i <= n; ++i) {
          if (i == best) continue;
          for (int d = 0; d < n; ++d) p[i][d] = p[best][d] + 0.5 * (p[i][d] - p[best][d]);
          v[i] = f(p[i]);
          ++evals;
        }
      }
    }
  }
  return p[std::min_element(v.begin(), v.end()) - v.begin()];
}

}  // namespace gpucast
