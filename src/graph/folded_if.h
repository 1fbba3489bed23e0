// An If whose condition is a value the sizes fix, read as the branch it takes.
//
// torch.onnx (torch 1.13, opset >= 11) exports `x.squeeze(d)` on a dim whose size it does not
// know as If(size(x, d) == 1, then: Squeeze(x, d), else: Identity(x)); nn.LocalResponseNorm's
// export holds one such squeeze. Once the loader knows the sizes (--batch, --dim) the condition
// folds to a constant and the If is one of its branches: the loader puts that branch's nodes in
// the If's place (docs/graph-loading.md), and they are inferred and costed as any other node.
// An If whose condition does not fold stays a node whose subgraphs are not analysed.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace gpucast {

// The nodes that stand in `if_node`'s place when its condition is `condition`: the taken
// branch's nodes with every name they define renamed, the one that is the branch's k-th output
// to the If's k-th output and the others to "<If name>/<then|else>/<name>" (reads of those
// names inside nested subgraphs renamed too), node names prefixed alike, and an Identity for
// each If output whose branch output the branch does not define itself (an outer name, or one
// output listed twice). nullopt when the branch cannot stand in: `if_node` is not a
// default-domain If with one input, the branch is missing, has inputs or initializers, has
// another output count than the If, defines a name twice, or a renamed name is `taken`.
std::optional<std::vector<onnx::NodeProto>> TakenBranch(const onnx::NodeProto& if_node, bool condition,
                                                        const std::function<bool(const std::string&)>& taken);

}  // namespace gpucast
