// Content hashes (SHA-256, lowercase hex) for the binary cache key and the
// content-addressed blob store.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace pypto {

std::string sha256_hex(std::string_view data);

// Incremental hashing of several parts; each part is length-prefixed so
// ("ab","c") and ("a","bc") hash differently.
class Hasher {
 public:
  Hasher();
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;
  Hasher& add(std::string_view part);
  std::string hex();  // finishes; the hasher must not be used afterwards

 private:
  void* ctx_;
};

}  // namespace pypto
