#include "coordinator/timeline_command.h"

#include <filesystem>

#include "artifact/build_paths.h"
#include "common/fs_util.h"
#include "coordinator/timeline.h"

namespace pypto::coord {

void add_timeline_args(CLI::App& cmd, TimelineArgs& args) {
  cmd.add_option("dir", args.dir, "build directory, or its dfx_outputs/")
      ->required()
      ->transform(normal_path);
}

int run_timeline(const TimelineArgs& args, std::ostream& out) {
  fs::path root(args.dir);
  if (fs::is_directory(root / kDfxOutputsDir)) root /= kDfxOutputsDir;
  const RunTimeline run = read_run_timeline(root);
  const fs::path file = root / "timeline.json";
  write_file_atomic(file, timeline_json(run).dump() + "\n");
  size_t tasks = 0;
  for (const TimelineDispatch& d : run.dispatches) tasks += d.tasks.size();
  out << "timeline: " << file.string() << " (" << run.world() << " rank(s), "
      << run.dispatches.size() << " dispatch(es), " << tasks
      << " task(s)); open it in https://ui.perfetto.dev or chrome://tracing\n";
  return 0;
}

}  // namespace pypto::coord
