#include "pypto/golden_spec.h"

#include <cmath>
#include <system_error>

#include "artifact/build_paths.h"
#include "artifact/sidecar_checks.h"
#include "common/json_reader.h"
#include "pypto/error.h"

namespace pypto {

namespace {

double tolerance(JsonObject& root, const std::string& key) {
  double v = root.number(key);
  if (!std::isfinite(v) || v < 0) root.fail(key, "must be a finite number >= 0");
  return v;
}

// Golden data files must be regular files inside the build directory; returns
// what is wrong with `file`, or an empty string.
std::string golden_file_problem(const fs::path& file, const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return "is missing";
  if (!resolves_inside(file, dir))
    return "points through a symbolic link out of " + dir.generic_string() +
           "; a build directory must be self-contained";
  return {};
}

}  // namespace

fs::path GoldenSpec::input_path(const fs::path& dir, const std::string& param) {
  return dir / fs::path(kGoldenInputsDir) / (param + ".npy");
}

fs::path GoldenSpec::expected_path(const fs::path& dir, const std::string& param) {
  return dir / fs::path(kGoldenExpectedDir) / (param + ".npy");
}

GoldenSpec GoldenSpec::load(const fs::path& dir, const std::vector<ParamInfo>& params) {
  Json storage;
  JsonObject root = load_json_object(dir / kGoldenFile, sidecar_display(dir, kGoldenFile),
                                     recompile_remedy(dir), storage);
  return from_json(root, dir, params);
}

std::optional<GoldenSpec> GoldenSpec::load_if_present(const fs::path& dir,
                                                      const std::vector<ParamInfo>& params) {
  std::error_code ec;
  if (!fs::exists(dir / fs::path(kGoldenDir), ec)) return std::nullopt;
  return load(dir, params);
}

GoldenSpec GoldenSpec::from_json(JsonObject& root, const fs::path& dir,
                                 const std::vector<ParamInfo>& params) {
  root.expect_schema(kSidecarSchema);
  GoldenSpec g;
  g.rtol = tolerance(root, "rtol");
  g.atol = tolerance(root, "atol");
  g.outputs = root.strings("outputs");
  if (g.outputs.empty()) root.fail("outputs", "is empty; golden/ must check at least one output");
  g.seed = root.integer("seed");
  root.reject_unknown_keys();

  const std::string meta_hint = " (parameters: " + param_names(params) + ")";
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const std::string key = "outputs[" + std::to_string(i) + "]";
    const std::string& name = g.outputs[i];
    for (size_t j = 0; j < i; ++j)
      if (g.outputs[j] == name)
        root.fail(key, "'" + name + "' is already listed as outputs[" + std::to_string(j) +
                           "]; outputs must be unique");
    const ParamInfo* p = find_param(params, name);
    if (!p)
      root.fail(key, "names '" + name + "', which is not a parameter of the program" + meta_hint);
    if (!p->is_output())
      root.fail(key, "names '" + name + "', which is an " + direction_name(p->direction) +
                         " parameter; only Out and InOut parameters can be checked");
    std::string problem = golden_file_problem(expected_path(dir, name), dir);
    if (!problem.empty())
      root.fail(key,
                "names '" + name + "', but " +
                    sidecar_display(dir, std::string(kGoldenExpectedDir) + "/" + name + ".npy") +
                    " " + problem);
  }
  // Inputs are implied by the parameters, so their absence names the input file itself.
  for (const ParamInfo& p : params) {
    if (!p.is_input()) continue;
    std::string problem = golden_file_problem(input_path(dir, p.name), dir);
    if (!problem.empty())
      throw ArtifactError(
          sidecar_display(dir, std::string(kGoldenInputsDir) + "/" + p.name + ".npy"), "",
          problem + "; golden/ needs an input file for every In/InOut parameter, and '" + p.name +
              "' is " + direction_name(p.direction),
          recompile_remedy(dir));
  }
  return g;
}

Json GoldenSpec::to_json() const {
  return Json{{"schema", kSidecarSchema},
              {"rtol", rtol},
              {"atol", atol},
              {"outputs", outputs},
              {"seed", seed}};
}

void GoldenSpec::write(const fs::path& dir) const {
  write_json_atomic(dir / kGoldenFile, to_json());
}

}  // namespace pypto
