#include "artifact/compiled_meta.h"

#include "artifact/build_paths.h"
#include "artifact/sidecar_checks.h"

namespace pypto {

CompiledMeta CompiledMeta::load(const fs::path& dir) {
  Json storage;
  JsonObject root =
      load_json_object(dir / kCompiledMetaFile, sidecar_display(dir, kCompiledMetaFile),
                       recompile_remedy(dir), storage);
  return from_json(root);
}

CompiledMeta CompiledMeta::from_json(JsonObject& root) {
  root.expect_schema(kSidecarSchema);
  CompiledMeta m;
  m.program = non_empty_string(root, "program");
  m.params = parse_params(root, "params");
  m.num_return_types = root.integer("num_return_types");
  if (m.num_return_types < 0) root.fail("num_return_types", "is negative; it must be >= 0");
  read_platform_and_arch(root, m.platform, m.arch);
  m.compiler_version = non_empty_string(root, "compiler_version");
  root.reject_unknown_keys();
  return m;
}

Json CompiledMeta::to_json() const {
  return Json{{"schema", kSidecarSchema},
              {"program", program},
              {"params", params_to_json(params)},
              {"num_return_types", num_return_types},
              {"platform", platform},
              {"arch", arch},
              {"compiler_version", compiler_version}};
}

void CompiledMeta::write(const fs::path& dir) const {
  write_json_atomic(dir / kCompiledMetaFile, to_json());
}

}  // namespace pypto
