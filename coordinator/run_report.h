// report/run.html: one self-contained page per run (no network, no scripts)
// with the outcome, an SVG picture of the run (ranks x time, dispatch and task
// bars) and a per-rank, per-dispatch table (docs/dfx.md "The run report").
#pragma once

#include <filesystem>
#include <string>

#include "common/json_reader.h"
#include "coordinator/timeline.h"

namespace pypto::coord {

namespace fs = std::filesystem;

// The page for `report` (the fields of report/run.json: program, result, error,
// world, platform, run_ms, prepare_ms, launch_ms, bytes_shipped, ranks[] with
// host, bytes_shipped, cache_hits, compiles, dispatches[]). `timeline`, when
// given, is this run's DFX records: task bars and kernel times come from it;
// without it the picture has the dispatches alone (their CLOCK_REALTIME spans).
std::string run_report_html(const Json& report, const RunTimeline* timeline);

// Writes <build_dir>/report/run.html from `report`; reads dfx_outputs/ when
// `dfx_current` (the run wrote its records there). A page that cannot be
// written is a warning: the run's outcome stands.
void write_run_html(const fs::path& build_dir, const Json& report, bool dfx_current);

}  // namespace pypto::coord
