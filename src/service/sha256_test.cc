// SHA-256 against the FIPS 180-2 appendix examples and the NIST "million a"
// vector, split across Update calls at every boundary that matters.
#include "service/sha256.h"

#include <cstdio>

#include <gtest/gtest.h>

namespace gpucast::service {
namespace {

TEST(Sha256, FipsVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, SplitUpdatesGiveTheSameDigest) {
  std::string msg;
  for (int i = 0; i < 300; ++i) msg.push_back(static_cast<char>(i * 7));
  const std::string whole = Sha256Hex(msg);
  for (size_t cut : {0, 1, 55, 56, 63, 64, 65, 128, 299}) {
    Sha256 s;
    s.Update(std::string_view(msg).substr(0, cut));
    s.Update(std::string_view(msg).substr(cut));
    std::string hex;
    for (uint8_t b : s.Finish()) {
      char buf[3];
      std::snprintf(buf, sizeof buf, "%02x", b);
      hex += buf;
    }
    EXPECT_EQ(hex, whole) << "cut at " << cut;
  }
}

}  // namespace
}  // namespace gpucast::service
