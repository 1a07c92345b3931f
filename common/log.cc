#include "common/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <atomic>
#include <cstdlib>

#include "pypto/error.h"

namespace pypto::log {

namespace {
Level level_from_env();
// PYPTO_RUNTIME_LOG applies from the start, so a host program linked against
// libpypto (which never calls init) honours it too; an invalid value is left
// for init() to report.
std::atomic<Level> g_level{level_from_env()};

std::shared_ptr<spdlog::logger> make_logger() {
  // Diagnostics go to stderr so stdout stays machine-readable (exec markers, --json).
  auto logger = spdlog::stderr_color_mt("pypto");
  logger->set_level(spdlog::level::trace);  // filtering happens in enabled()
  logger->set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
  return logger;
}

std::shared_ptr<spdlog::logger>& logger_ptr() {
  static std::shared_ptr<spdlog::logger> logger = make_logger();
  return logger;
}

const char* kValidNames = "debug, info, timing, warn, error, null";

Level level_from_env() {
  const char* env = std::getenv("PYPTO_RUNTIME_LOG");
  const auto parsed = env ? parse_level(env) : std::nullopt;
  return parsed.value_or(Level::kInfo);
}
}  // namespace

std::optional<Level> parse_level(std::string_view name) {
  if (name == "debug") return Level::kDebug;
  if (name == "info") return Level::kInfo;
  if (name == "timing") return Level::kTiming;
  if (name == "warn") return Level::kWarn;
  if (name == "error") return Level::kError;
  if (name == "null") return Level::kNull;
  return std::nullopt;
}

const char* level_name(Level level) {
  switch (level) {
    case Level::kDebug: return "debug";
    case Level::kInfo: return "info";
    case Level::kTiming: return "timing";
    case Level::kWarn: return "warn";
    case Level::kError: return "error";
    case Level::kNull: return "null";
  }
  return "info";
}

void init(const std::optional<std::string>& cli_level) {
  if (cli_level) {
    auto parsed = parse_level(*cli_level);
    if (!parsed)
      throw UsageError("--log-level '" + *cli_level + "' is not a log level; use one of " +
                       kValidNames);
    set_level(*parsed);
    return;
  }
  if (const char* env = std::getenv("PYPTO_RUNTIME_LOG"); env && *env) {
    auto parsed = parse_level(env);
    if (!parsed)
      throw UsageError(std::string("PYPTO_RUNTIME_LOG='") + env +
                       "' is not a log level; use one of " + kValidNames);
    set_level(*parsed);
  }
}

void set_level(Level level) { g_level.store(level); }
Level level() { return g_level.load(); }

void set_prefix(const std::string& prefix) {
  logger().set_pattern("[%H:%M:%S.%e] [%^%l%$] " + prefix + " %v");
}

bool enabled(Level level) { return level >= g_level.load(std::memory_order_relaxed); }

spdlog::logger& logger() { return *logger_ptr(); }

}  // namespace pypto::log
