// SHA-256 (FIPS 180-4), for content-addressing uploaded models. Small and
// self-contained; tested against the FIPS 180-2 example vectors.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace gpucast::service {

class Sha256 {
 public:
  Sha256();
  void Update(std::string_view bytes);
  std::array<uint8_t, 32> Finish();  // call once

 private:
  void Block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

// Lower-case hex digest of `bytes` (64 characters).
std::string Sha256Hex(std::string_view bytes);

}  // namespace gpucast::service
