// Splitting a command-line fragment (`--mpirun-args "--mca btl tcp,self"`) into
// words the way a POSIX shell would, without running a shell: no expansion of
// variables, globs or `~`, so what the user typed is what mpirun receives.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pypto::launch {

// Words separated by unquoted blanks (space, tab, newline). Quoting follows sh:
//   'single quotes'  keep everything literally, up to the next '
//   "double quotes"  keep everything, except that \" \\ \$ \` lose the backslash
//                    and backslash-newline disappears
//   \c outside quotes keeps c (backslash-newline disappears)
// Adjacent parts join into one word (a"b c"'d' is `ab cd`); "" is an empty word.
// Throws UsageError naming the problem on an unterminated quote or a trailing
// backslash.
std::vector<std::string> split_command_words(std::string_view text);

}  // namespace pypto::launch
