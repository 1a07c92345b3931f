// Helpers for the common/wire tests: a scratch directory removed with the
// object, and small file writers.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/scratch_dir.h"

namespace pypto::wire::testing {

namespace fs = std::filesystem;

class ScratchDir : public pypto::ScratchDir {
 public:
  ScratchDir() : pypto::ScratchDir("pypto_wire") {}
};

inline void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

inline std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace pypto::wire::testing
