#include "artifact/program_meta.h"

#include "artifact/build_paths.h"
#include "artifact/sidecar_checks.h"

namespace pypto {

void ProgramMeta::read_program_fields(JsonObject& root) {
  root.expect_schema(kSidecarSchema);
  program = non_empty_string(root, "program");
  params = parse_params(root, "params");
  scalars = parse_scalar_params(root, "scalars");
  for (const ScalarParam& s : scalars)
    if (find_param(params, s.name))
      root.fail("scalars", "'" + s.name + "' names a tensor parameter too; names are unique");
  num_return_types = root.integer("num_return_types");
  if (num_return_types < 0) root.fail("num_return_types", "is negative; it must be >= 0");
  read_platform_and_arch(root, platform, arch);
  compiler_version = non_empty_string(root, "compiler_version");
}

Json ProgramMeta::program_fields_json() const {
  Json j{{"schema", kSidecarSchema},
         {"program", program},
         {"params", params_to_json(params)},
         {"num_return_types", num_return_types},
         {"platform", platform},
         {"arch", arch},
         {"compiler_version", compiler_version}};
  if (!scalars.empty()) j["scalars"] = scalar_params_to_json(scalars);
  return j;
}

}  // namespace pypto
