#include "common/hash.h"

#include <openssl/evp.h>

#include <cstdint>
#include <stdexcept>

namespace pypto {

namespace {
std::string to_hex(const unsigned char* digest, unsigned len) {
  static const char* kDigits = "0123456789abcdef";
  std::string out(len * 2, '0');
  for (unsigned i = 0; i < len; ++i) {
    out[2 * i] = kDigits[digest[i] >> 4];
    out[2 * i + 1] = kDigits[digest[i] & 0xf];
  }
  return out;
}
}  // namespace

Hasher::Hasher() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ || EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("OpenSSL SHA-256 initialisation failed");
}

Hasher::~Hasher() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

Hasher& Hasher::add(std::string_view part) {
  auto* ctx = static_cast<EVP_MD_CTX*>(ctx_);
  uint64_t len = part.size();
  EVP_DigestUpdate(ctx, &len, sizeof(len));
  EVP_DigestUpdate(ctx, part.data(), part.size());
  return *this;
}

std::string Hasher::hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), digest, &len);
  return to_hex(digest, len);
}

std::string sha256_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);
  return to_hex(digest, len);
}

}  // namespace pypto
