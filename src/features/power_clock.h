// Whether the roofline counts the power-limited compute clock (SustainedComputeFraction,
// gpu_specs.h). Off by default: on, it makes the step time better on held-out data and the held-out
// GPU's utilization interval worse (docs/predictor.md, "The power-limited clock"), so only
// `gpucast evaluate --power-limited-clock` turns it on, for the whole process, before any feature
// is computed (a model file does not record it: train and predict always run with it off).
#pragma once

namespace gpucast {

void SetPowerLimitedClock(bool on);
bool PowerLimitedClock();

}  // namespace gpucast
