// ResolveEinsum against hand-worked equations (numpy's einsum rules).
#include "graph/einsum.h"

#include <gtest/gtest.h>

namespace gpucast {
namespace {

using V = std::vector<int64_t>;

TEST(Einsum, ExplicitOutputs) {
  // bij,bjk->bik: [2,3,4]·[2,4,5] -> [2,3,5]; space b,i,j,k = 2,3,4,5 (alphabetical: b i j k).
  Result<EinsumSpace> s = ResolveEinsum("bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(s->output_dims, (V{2, 3, 5}));
  EXPECT_EQ(s->extents, (V{2, 3, 4, 5}));
  EXPECT_TRUE(s->sums);  // j
  // bhqd,bhkd->bhqk: extents b d h k q = 2 16 4 6 8.
  s = ResolveEinsum("bhqd,bhkd->bhqk", {{2, 4, 8, 16}, {2, 4, 6, 16}});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(s->output_dims, (V{2, 4, 8, 6}));
  EXPECT_EQ(s->extents, (V{2, 16, 4, 6, 8}));
  // ij->ji: a permutation, nothing summed.
  s = ResolveEinsum("ij->ji", {{3, 5}});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(s->output_dims, (V{5, 3}));
  EXPECT_FALSE(s->sums);
  // Three operands resolve too (the loader needs the shape): ij,jk,kl->il.
  s = ResolveEinsum("ij,jk,kl->il", {{3, 4}, {4, 5}, {5, 6}});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(s->output_dims, (V{3, 6}));
}

TEST(Einsum, EllipsisAndImplicitOutput) {
  // ...ij,...jk->...ik: "..." [2,1] and [3] broadcast to [2,3].
  Result<EinsumSpace> s = ResolveEinsum("...ij,...jk->...ik", {{2, 1, 4, 5}, {3, 5, 6}});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(s->output_dims, (V{2, 3, 4, 6}));
  EXPECT_EQ(s->extents, (V{4, 5, 6, 2, 3}));
  // Implicit: ij,jk -> ik; ba,cb -> ac (sorted), "..." first: ...ij,...j -> ...i.
  s = ResolveEinsum("ij,jk", {{3, 4}, {4, 5}});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->output_dims, (V{3, 5}));
  s = ResolveEinsum("ba,cb", {{4, 3}, {5, 4}});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->output_dims, (V{3, 5}));
  s = ResolveEinsum("...ij,...j", {{7, 3, 4}, {4}});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(s->output_dims, (V{7, 3}));
  // Trace "ii": scalar output, i summed.
  s = ResolveEinsum("ii", {{3, 3}});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->output_dims, V{});
  EXPECT_TRUE(s->sums);
  // "..." in the middle of a term: b...d on [2,3,4,5] -> the "..." is [3,4].
  s = ResolveEinsum("b...d->...", {{2, 3, 4, 5}});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(s->output_dims, (V{3, 4}));
}

TEST(Einsum, BadEquationsSayWhy) {
  EXPECT_EQ(ResolveEinsum("ij,jk->ik", {{3, 4}, {5, 6}}).message(), "index 'j' is 4 and 5 (input 1)");
  EXPECT_EQ(ResolveEinsum("i..j...", {{3, 4}}).message(),
            "equation operand 0 'i..j...' has character '.', want letters and '...'");
  EXPECT_EQ(ResolveEinsum("...i...", {{3, 4}}).message(), "equation operand 0 '...i...' has two '...'");
  EXPECT_EQ(ResolveEinsum("ij->ii", {{3, 3}}).message(), "output index 'i' appears twice");
  EXPECT_EQ(ResolveEinsum("ij", {{3, 4}, {4}}).message(), "equation 'ij' has 1 operand terms, node has 2 inputs");
  EXPECT_EQ(ResolveEinsum("ij", {{3}}).message(), "input 0 (term 'ij') has rank 1, want 2");
  EXPECT_EQ(ResolveEinsum("...ij", {{3}}).message(), "input 0 (term '...ij') has rank 1, want 2 or more");
  EXPECT_EQ(ResolveEinsum(std::string(2000, 'a'), {{3}}).message(), "equation has 2000 characters, limit 1024");
}

}  // namespace
}  // namespace gpucast
