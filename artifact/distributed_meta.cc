#include "artifact/distributed_meta.h"

#include <limits>

#include "artifact/build_paths.h"
#include "artifact/sidecar_checks.h"

namespace pypto {

DistributedMeta DistributedMeta::load(const fs::path& dir) {
  Json storage;
  JsonObject root =
      load_json_object(dir / kDistributedMetaFile, sidecar_display(dir, kDistributedMetaFile),
                       recompile_remedy(dir), storage);
  return from_json(root);
}

DistributedMeta DistributedMeta::from_json(JsonObject& root) {
  DistributedMeta m;
  m.read_program_fields(root);
  m.world_size = root.integer("world_size");
  if (m.world_size < 1)
    root.fail("world_size", "is " + std::to_string(m.world_size) + "; it must be >= 1");

  JsonObject dc = root.object("distributed_config");
  DistributedConfig& c = m.distributed_config;
  c.device_ids = dc.integers("device_ids");
  if (c.device_ids.empty())
    dc.fail("device_ids", "is empty; it needs one device id per rank (world_size " +
                              std::to_string(m.world_size) + ")");
  UniqueChecker<int64_t> ids("device ids");
  for (size_t i = 0; i < c.device_ids.size(); ++i) {
    const std::string key = "device_ids[" + std::to_string(i) + "]";
    if (c.device_ids[i] < 0) dc.fail(key, "is negative; device ids are integers >= 0");
    ids.add(dc, key, c.device_ids[i], "device id " + std::to_string(c.device_ids[i]));
  }
  if (static_cast<int64_t>(c.device_ids.size()) != m.world_size)
    dc.fail("device_ids", "has " + std::to_string(c.device_ids.size()) +
                              " entries but world_size is " + std::to_string(m.world_size) +
                              "; it needs one device id per rank");
  c.runtime = dc.string("runtime");
  if (c.runtime != kChipRuntime)
    dc.fail("runtime", "'" + c.runtime + "' is not a chip runtime; the only one is " +
                           std::string(kChipRuntime));
  c.aicpu_thread_num = dc.integer("aicpu_thread_num");
  if (c.aicpu_thread_num < 1 || c.aicpu_thread_num > std::numeric_limits<int>::max())
    dc.fail("aicpu_thread_num", "is " + std::to_string(c.aicpu_thread_num) +
                                    "; it must be >= 1 and at most " +
                                    std::to_string(std::numeric_limits<int>::max()));
  c.num_sub_workers = dc.integer("num_sub_workers");
  if (c.num_sub_workers < 0) dc.fail("num_sub_workers", "is negative; it must be >= 0");
  dc.reject_unknown_keys();
  root.reject_unknown_keys();
  return m;
}

Json DistributedMeta::to_json() const {
  const DistributedConfig& c = distributed_config;
  Json j = program_fields_json();
  j["world_size"] = world_size;
  j["distributed_config"] = Json{{"device_ids", c.device_ids},
                                 {"runtime", c.runtime},
                                 {"aicpu_thread_num", c.aicpu_thread_num},
                                 {"num_sub_workers", c.num_sub_workers}};
  return j;
}

void DistributedMeta::write(const fs::path& dir) const {
  write_json_atomic(dir / kDistributedMetaFile, to_json());
}

}  // namespace pypto
