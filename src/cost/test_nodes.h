// Test-only: finding a node's cost in a CostReport by node name.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "cost/cost.h"

namespace gpucast::testing {

// The cost of node `name`; a test failure (and an empty NodeCost) when the
// report has none.
inline const NodeCost& NodeNamed(const CostReport& r, const std::string& name) {
  for (const NodeCost& c : r.nodes)
    if (c.name == name) return c;
  static const NodeCost none;
  ADD_FAILURE() << "no node " << name;
  return none;
}

}  // namespace gpucast::testing
