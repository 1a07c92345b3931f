// Durations in messages and on command lines, written the shortest way that reads
// back as the same value: "300", "2.9", "0.05" — never "300.000" or
// "0.10000000000000001".
#pragma once

#include <chrono>
#include <string>

namespace pypto {

// The shortest decimal text that parses back to `seconds` exactly.
std::string seconds_text(double seconds);
// `ms` in seconds ("2900 ms" -> "2.9"); exact, as every millisecond count is.
std::string seconds_text(std::chrono::milliseconds ms);

}  // namespace pypto
