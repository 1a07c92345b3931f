#include "common/seconds_text.h"

#include <charconv>

namespace pypto {

std::string seconds_text(double seconds) {
  char text[64];
  const auto result = std::to_chars(text, text + sizeof text, seconds);
  return std::string(text, result.ptr);
}

std::string seconds_text(std::chrono::milliseconds ms) {
  // Whole milliseconds divided by 1000: the nearest double prints back as the
  // decimal the count spells, so no rounding digits appear.
  return seconds_text(static_cast<double>(ms.count()) / 1000.0);
}

}  // namespace pypto
