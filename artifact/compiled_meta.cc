#include "artifact/compiled_meta.h"

#include "artifact/build_paths.h"

namespace pypto {

CompiledMeta CompiledMeta::load(const fs::path& dir) {
  Json storage;
  JsonObject root =
      load_json_object(dir / kCompiledMetaFile, sidecar_display(dir, kCompiledMetaFile),
                       recompile_remedy(dir), storage);
  return from_json(root);
}

CompiledMeta CompiledMeta::from_json(JsonObject& root) {
  CompiledMeta m;
  m.read_program_fields(root);
  root.reject_unknown_keys();
  return m;
}

Json CompiledMeta::to_json() const { return program_fields_json(); }

void CompiledMeta::write(const fs::path& dir) const {
  write_json_atomic(dir / kCompiledMetaFile, to_json());
}

}  // namespace pypto
