// Writes one dispatch's DFX files (docs/dfx.md) from the
// DispatchRecord the chip runtime filled. Each switch is independent and
// writes only its own files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "orchestration/dispatch_record.h"
#include "pypto/run_config.h"

namespace pypto::chip {

// func_id -> kernel name, written as name_map.json beside the other files.
using NameMap = std::map<int32_t, std::string>;

struct DfxContext {
  std::string program;  // orchestration name
  int rank = 0;
  int world = 1;
  NameMap names;
};

// Writes into `dir` (created when needed):
//   --swimlane N     chip_swimlane_records.json
//   --dep-gen        deps.json
//   --pmu N          pmu.csv
//   --scope-stats    scope_stats/scope_stats.jsonl
//   --dump-args N    args_dump/args_dump.json + args_dump/args.bin
// and name_map.json whenever any switch is on. Files are written atomically.
void write_dispatch_dfx(const std::filesystem::path& dir, const DispatchRecord& record,
                        const DfxOptions& dfx, const DfxContext& context);

}  // namespace pypto::chip
