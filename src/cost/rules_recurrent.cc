// Recurrent rules (one ONNX node = one layer, all steps and directions),
// following the paper's model: each step is two linear layers, the input x
// (I features) and the hidden state h (H) against the g·H gate weights
// (g = 4 LSTM, 3 GRU, 1 RNN), plus gate arithmetic. Per step and direction,
// with B = batch:
//   linear   2·B·I·gH + 2·B·H·gH
//   combine  B·gH            (adding the x and h parts of every gate)
//   bias     2·B·gH          (ONNX's separate Wb and Rb), if B is given
//   gates    B·H·e           (activations + state updates, per hidden unit):
//     LSTM e = 18: 3 sigmoids × 4 + tanh(g) 1 + tanh(c) 1 + c = f·c + i·g (3) + h = o·tanh(c) (1)
//     GRU  e = 14: 2 sigmoids × 4 + tanh 1 + r·(h part) 1 + h = (1−z)·n + z·h (4)
//     RNN  e = 1:  the activation
// forward = steps · directions · (linear + combine + bias + gates).
// Backward per step and direction: weight grads 2·B·I·gH + 2·B·H·gH, the
// grad through the recurrence 2·B·H·gH, the input grad 2·B·I·gH if x needs
// it, bias grads 2·B·gH, and twice the forward combine + gates arithmetic.
#include "cost/rules.h"

namespace gpucast {
namespace {

Result<OpCost> Recurrent(const OpArgs& a, int64_t gates, int64_t per_unit) {
  const TensorInfo* x = a.In(0);
  const TensorInfo* w = a.In(1);
  const TensorInfo* r = a.In(2);
  if (!x || !w || !r) return Status::Error("needs inputs X, W and R");
  if (x->dims.size() != 3) return RankError("input X", x->dims.size(), "3");
  if (w->dims.size() != 3) return RankError("weight W", w->dims.size(), "3 (directions, gates·hidden, input)");
  if (r->dims.size() != 3) return RankError("weight R", r->dims.size(), "3 (directions, gates·hidden, hidden)");
  int64_t hidden = a.node.AttrInt("hidden_size").value_or(r->dims[2]);
  bool batch_first = a.node.AttrInt("layout").value_or(0) == 1;
  int64_t steps = batch_first ? x->dims[1] : x->dims[0];
  int64_t batch = batch_first ? x->dims[0] : x->dims[1];
  int64_t in = x->dims[2];
  int64_t dirs = w->dims[0];
  int64_t gh = gates * hidden;
  if (w->dims[1] != gh || w->dims[2] != in)
    return Status::Error("weight W is " + std::to_string(w->dims[1]) + "×" + std::to_string(w->dims[2]) +
                         ", want " + std::to_string(gh) + "×" + std::to_string(in));
  if (r->dims[0] != dirs || r->dims[1] != gh || r->dims[2] != hidden)
    return Status::Error("weight R is " + std::to_string(r->dims[1]) + "×" + std::to_string(r->dims[2]) +
                         ", want " + std::to_string(gh) + "×" + std::to_string(hidden));
  Count bg = Count(batch) * gh;
  Count x_lin = Count(2) * bg * in;
  Count h_lin = Count(2) * bg * hidden;
  Count bias = a.In(3) ? Count(2) * bg : Count(0);
  Count pointwise = bg + Count(batch) * hidden * per_unit;
  Count reps = Count(steps) * dirs;
  OpCost c;
  c.forward_flops = reps * (x_lin + h_lin + bias + pointwise);
  if (a.AnyGrad()) {
    Count step = h_lin + Count(2) * pointwise;            // recurrence + gate arithmetic
    if (a.Grad(1)) step += x_lin;                         // dW
    if (a.Grad(2)) step += h_lin;                         // dR
    if (a.Grad(0)) step += x_lin;                         // dX
    if (a.Grad(3)) step += bias;                          // dB
    c.backward_flops = reps * step;
  }
  return c;
}

}  // namespace

Result<OpCost> LstmRule(const OpArgs& a) { return Recurrent(a, 4, 18); }
Result<OpCost> GruRule(const OpArgs& a) { return Recurrent(a, 3, 14); }
Result<OpCost> RnnRule(const OpArgs& a) { return Recurrent(a, 1, 1); }

}  // namespace gpucast
