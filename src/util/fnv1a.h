// FNV-1a, 64-bit (offset basis 0xcbf29ce484222325, prime 0x100000001b3): the one
// non-cryptographic hash gpucast keys things by (training-data digests, cache file
// names, the loader's samples of parameter matrices). Not for anything a user could
// collide on purpose to gain something.
#pragma once

#include <cstdint>
#include <string_view>

namespace gpucast {

inline constexpr uint64_t kFnv1a64Basis = 0xcbf29ce484222325ULL;

// The hash of `bytes`, continuing from `h` (a previous call's result, to hash
// pieces as one string).
constexpr uint64_t Fnv1a64(std::string_view bytes, uint64_t h = kFnv1a64Basis) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace gpucast
