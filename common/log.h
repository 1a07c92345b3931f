// Logging through spdlog with PyPTO's level names. "timing" sits between info
// and warn: at level timing, a run prints its phase timings and warnings but
// not the chatter of info.
#pragma once

#include <spdlog/spdlog.h>

#include <optional>
#include <string>
#include <string_view>

namespace pypto::log {

enum class Level { kDebug = 0, kInfo = 1, kTiming = 2, kWarn = 3, kError = 4, kNull = 5 };

// Parses debug|info|timing|warn|error|null; nullopt for anything else.
std::optional<Level> parse_level(std::string_view name);
const char* level_name(Level level);

// Level from --log-level when given, else PYPTO_RUNTIME_LOG, else info.
// Throws UsageError naming the valid names when either is unknown.
void init(const std::optional<std::string>& cli_level);
void set_level(Level level);
Level level();
// Agents prefix every line with their rank ("[rank 3]").
void set_prefix(const std::string& prefix);

bool enabled(Level level);
spdlog::logger& logger();

template <typename... Args>
void debug(spdlog::format_string_t<Args...> fmt, Args&&... args) {
  if (enabled(Level::kDebug)) logger().debug(fmt, std::forward<Args>(args)...);
}
template <typename... Args>
void info(spdlog::format_string_t<Args...> fmt, Args&&... args) {
  if (enabled(Level::kInfo)) logger().info(fmt, std::forward<Args>(args)...);
}
template <typename... Args>
void timing(spdlog::format_string_t<Args...> fmt, Args&&... args) {
  if (enabled(Level::kTiming)) logger().info(fmt, std::forward<Args>(args)...);
}
template <typename... Args>
void warn(spdlog::format_string_t<Args...> fmt, Args&&... args) {
  if (enabled(Level::kWarn)) logger().warn(fmt, std::forward<Args>(args)...);
}
template <typename... Args>
void error(spdlog::format_string_t<Args...> fmt, Args&&... args) {
  if (enabled(Level::kError)) logger().error(fmt, std::forward<Args>(args)...);
}

}  // namespace pypto::log
