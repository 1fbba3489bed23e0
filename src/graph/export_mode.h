// Is a graph an eval-mode (inference) export? gpucast costs a training step;
// an eval-mode export of a PyTorch model has lost what training runs
// (BatchNorm folded into the convolutions, Dropout removed, BatchNorm in its
// inference form). The signals, each certain when it fires (docs/models.md):
//
//   - a BatchNormalization node in inference form: one output (opset < 14;
//     a training-mode node also outputs the running/saved statistics) or,
//     at opset >= 14, no training_mode=1 attribute;
//   - a Dropout node (opset >= 12) whose training_mode input is absent or a
//     constant false;
//   - a Conv whose weight or bias is a parameter named "onnx::Conv_<n>": the
//     PyTorch exporter names a Conv parameter so only when it computed the
//     tensor itself, which eval mode does when it folds a BatchNormalization
//     into the Conv (module parameters keep their module names);
//   - an Identity node whose input is a parameter (a graph input or
//     initializer): the PyTorch exporter merges parameters of equal value
//     (a fresh model's LayerNorm weights, all ones) into one, the others
//     becoming Identity nodes of it, only in eval mode; in training mode it
//     merges only tensors that share storage, which tied weights (one
//     Parameter used twice) do not need.
//
// Not detectable: an eval-mode export of a model that has neither BatchNorm
// nor Dropout loses nothing a training step runs; one of a trained model (no
// two parameters equal) with Dropout but no BatchNorm loses only the Dropout
// nodes, and a graph without Dropout may be a model without it.
#pragma once

#include <string>

#include "graph/graph.h"

namespace gpucast {

// "" when no signal fires; else one sentence naming the signals, counts and
// first node, and how to re-export (no file prefix).
std::string EvalModeExportWarning(const Graph& graph);

}  // namespace gpucast
