#include "artifact/loaded_binary.h"

#include <dlfcn.h>

#include <utility>

#include "pypto/error.h"

namespace pypto {

LoadedBinary::LoadedBinary(const std::filesystem::path& path) : path_(path) {
  handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* why = ::dlerror();
    throw InfraError("cannot load " + path.string() + ": " + (why ? why : "unknown dlopen error") +
                     "; invalidate the binary cache (pypto-coord replay recompiles) and run again");
  }
}

LoadedBinary::~LoadedBinary() { close(); }

LoadedBinary::LoadedBinary(LoadedBinary&& other) noexcept
    : path_(std::move(other.path_)), handle_(std::exchange(other.handle_, nullptr)) {}

LoadedBinary& LoadedBinary::operator=(LoadedBinary&& other) noexcept {
  if (this != &other) {
    close();
    path_ = std::move(other.path_);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

void LoadedBinary::close() noexcept {
  if (handle_) ::dlclose(handle_);
  handle_ = nullptr;
}

void* LoadedBinary::find_symbol(const std::string& name) const noexcept {
  if (!handle_) return nullptr;
  ::dlerror();  // clear a stale error
  return ::dlsym(handle_, name.c_str());
}

void* LoadedBinary::symbol(const std::string& name) const {
  if (!handle_) throw InfraError("internal error: symbol lookup in a moved-from LoadedBinary");
  ::dlerror();
  void* address = ::dlsym(handle_, name.c_str());
  if (const char* why = ::dlerror(); why || !address)
    throw InfraError(path_.string() + " does not export the symbol '" + name +
                     "'; the source must define it as extern \"C\"" +
                     (why ? std::string(" (") + why + ")" : std::string()));
  return address;
}

std::optional<uint32_t> LoadedBinary::abi_version() const {
  using AbiVersionFn = uint32_t (*)();
  auto fn = reinterpret_cast<AbiVersionFn>(find_symbol("pypto_abi_version"));
  if (!fn) return std::nullopt;
  return fn();
}

}  // namespace pypto
