#include "artifact/sidecar_checks.h"

#include <array>
#include <system_error>

namespace pypto {

namespace {
constexpr std::array<std::string_view, 4> kPlatforms{"a2a3sim", "a2a3", "a5sim", "a5"};
constexpr std::array<std::string_view, 2> kArchs{"a2a3", "a5"};

std::string single_quoted(std::string_view s) { return "'" + std::string(s) + "'"; }
}  // namespace

bool is_c_identifier(std::string_view name) {
  if (name.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(name[0])) return false;
  for (char c : name)
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  return true;
}

bool resolves_inside(const fs::path& path, const fs::path& dir) {
  std::error_code ec;
  fs::path base = fs::weakly_canonical(dir, ec);
  if (ec) return false;
  fs::path resolved = fs::weakly_canonical(path, ec);
  if (ec) return false;
  auto b = base.begin();
  auto r = resolved.begin();
  for (; b != base.end(); ++b, ++r) {
    if (b->empty()) continue;  // trailing separator of the base
    if (r == resolved.end() || *r != *b) return false;
  }
  return true;
}

fs::path checked_relative_path(const JsonObject& obj, const std::string& key,
                               const std::string& value, const fs::path& dir) {
  if (value.empty()) obj.fail(key, "is empty; it must be a path relative to the directory");
  if (value.find('\\') != std::string::npos)
    obj.fail(key, single_quoted(value) + " contains '\\'; paths in sidecars use '/'");
  fs::path rel(value);
  if (rel.is_absolute())
    obj.fail(key, single_quoted(value) +
                      " is absolute; it must be relative to the directory that " +
                      "holds the sidecar");
  for (const auto& part : rel)
    if (part == "..")
      obj.fail(key, single_quoted(value) +
                        " contains '..'; it must stay inside the directory that " +
                        "holds the sidecar");
  // Lexically fine; now make sure no symbolic link on the way leads elsewhere.
  fs::path full = dir / rel;
  if (!resolves_inside(full, dir))
    obj.fail(key, single_quoted(value) + " points through a symbolic link out of " +
                      dir.generic_string() + "; a build directory must be self-contained");
  return full;
}

fs::path checked_existing_file(const JsonObject& obj, const std::string& key,
                               const std::string& value, const fs::path& dir) {
  fs::path full = checked_relative_path(obj, key, value, dir);
  std::error_code ec;
  if (!fs::exists(full, ec))
    obj.fail(key, "names " + single_quoted(value) + ", which does not exist in " +
                      (dir.empty() ? std::string(".") : dir.generic_string()));
  if (!fs::is_regular_file(full, ec))
    obj.fail(key, "names " + single_quoted(value) + ", which is not a regular file");
  return full;
}

bool is_known_platform(std::string_view platform) {
  for (auto p : kPlatforms)
    if (p == platform) return true;
  return false;
}

bool is_known_arch(std::string_view arch) {
  for (auto a : kArchs)
    if (a == arch) return true;
  return false;
}

const char* known_platforms() { return "a2a3sim, a2a3, a5sim, a5"; }

std::string arch_of_platform(std::string_view platform) {
  for (auto a : kArchs)
    if (platform.substr(0, a.size()) == a) return std::string(a);
  return {};
}

void read_platform_and_arch(JsonObject& obj, std::string& platform, std::string& arch) {
  platform = obj.string("platform");
  arch = obj.string("arch");
  if (!is_known_platform(platform))
    obj.fail("platform",
             single_quoted(platform) + " is not a platform; expected one of " + known_platforms());
  if (!is_known_arch(arch))
    obj.fail("arch", single_quoted(arch) + " is not an architecture; expected a2a3 or a5");
  if (arch_of_platform(platform) != arch)
    obj.fail("arch", single_quoted(arch) + " does not agree with platform " +
                         single_quoted(platform) + ", which runs architecture " +
                         arch_of_platform(platform));
}

std::string non_empty_string(JsonObject& obj, const std::string& key) {
  std::string value = obj.string(key);
  if (value.empty()) obj.fail(key, "is empty");
  return value;
}

}  // namespace pypto
