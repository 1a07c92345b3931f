// A shared object opened with dlopen, closed when the object goes away.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace pypto {

class LoadedBinary {
 public:
  // dlopen(RTLD_NOW | RTLD_LOCAL): unresolved symbols fail here, not mid-run,
  // and kernels never see each other's symbols. Throws InfraError naming the
  // file and quoting dlerror().
  explicit LoadedBinary(const std::filesystem::path& path);
  ~LoadedBinary();

  LoadedBinary(LoadedBinary&& other) noexcept;
  LoadedBinary& operator=(LoadedBinary&& other) noexcept;
  LoadedBinary(const LoadedBinary&) = delete;
  LoadedBinary& operator=(const LoadedBinary&) = delete;

  // The address of `name`; throws InfraError naming the symbol and the file.
  void* symbol(const std::string& name) const;
  // The address of `name`, or nullptr when the binary does not export it.
  void* find_symbol(const std::string& name) const noexcept;

  template <typename Fn>
  Fn function(const std::string& name) const {
    return reinterpret_cast<Fn>(symbol(name));
  }

  // What the binary's pypto_abi_version() returns; nullopt when it lacks it.
  std::optional<uint32_t> abi_version() const;

  const std::filesystem::path& path() const { return path_; }

 private:
  void close() noexcept;

  std::filesystem::path path_;
  void* handle_ = nullptr;
};

}  // namespace pypto
