// The pypto-coord command line: subcommands over build directories.
#pragma once

namespace pypto::coord {

// Parses argv, runs the subcommand, and maps every error to its exit code
// (0 ok, 1 program failed, 2 usage, 3 infrastructure). Never throws.
int pypto_coord_main(int argc, char** argv);

}  // namespace pypto::coord
