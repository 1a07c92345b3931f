#include "coordinator/program_inputs.h"

#include <map>

#include "artifact/build_paths.h"
#include "pypto/error.h"
#include "pypto/npy.h"

namespace pypto::coord {

namespace {

std::string input_names(const std::vector<ParamInfo>& params) {
  std::string names;
  for (const auto& p : params)
    if (p.is_input()) names += (names.empty() ? "" : ", ") + p.name;
  return names.empty() ? "(none)" : names;
}

bool matches(const ParamInfo& param, const Tensor& t) {
  if (t.dtype() != param.dtype || t.shape().size() != param.shape.size()) return false;
  for (size_t d = 0; d < param.shape.size(); ++d)
    if (param.shape[d] != kDynamicExtent && param.shape[d] != t.shape()[d]) return false;
  return true;
}

// Reads `file`; every failure becomes an InfraError that says which input it was for.
Tensor read_input(const fs::path& file, const std::string& what) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    throw InfraError(what + ": " + file.string() +
                     (fs::exists(file, ec) ? " is not a regular file" : " does not exist"));
  try {
    return read_npy(file);
  } catch (const Error& e) {
    throw InfraError(what + ": " + e.what());
  }
}

// An Out parameter: fresh zeroed storage of its declared shape, or, for a
// dynamic shape, of the shape of its golden/expected file.
Tensor allocate_output(const ProgramData& program, const ParamInfo& p, std::string& source) {
  if (!p.has_dynamic_shape()) {
    source = "allocated " + p.type_string();
    return Tensor::empty(p.dtype, p.shape);
  }
  const fs::path expected = GoldenSpec::expected_path(program.dir, p.name);
  std::error_code ec;
  if (!program.golden || !fs::is_regular_file(expected, ec))
    throw InfraError("cannot allocate Out parameter '" + p.name + "' of " + p.type_string() +
                     ": its shape is dynamic and " +
                     sidecar_display(program.dir, "golden/expected/" + p.name + ".npy") +
                     " is absent to size it; recompile the program with a static shape or add "
                     "the expected output to golden/");
  Tensor shape_source = read_input(expected, "sizing Out parameter '" + p.name + "'");
  if (!matches(p, shape_source))
    throw ArtifactError(sidecar_display(program.dir, "golden/expected/" + p.name + ".npy"), "",
                        "holds " + shape_source.describe() + ", but parameter '" + p.name +
                            "' is " + p.type_string(),
                        recompile_remedy(program.dir));
  source = "allocated " + shape_source.describe() + " (shape of golden/expected/" + p.name +
           ".npy)";
  return Tensor::empty(p.dtype, shape_source.shape());
}

}  // namespace

InputOverride parse_input_override(const std::string& text, const std::string& flag) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw UsageError(flag + " '" + text + "': expected NAME=FILE.npy, e.g. " + flag + " a=a.npy");
  return {text.substr(0, eq), fs::path(text.substr(eq + 1))};
}

ProgramArguments prepare_arguments(const ProgramData& program,
                                   const std::vector<InputOverride>& overrides) {
  const std::vector<ParamInfo>& params = program.params;
  std::map<std::string, fs::path> given;
  for (const InputOverride& o : overrides) {
    const std::string flag = "--input " + o.name + "=" + o.file.string();
    const ParamInfo* p = find_param(params, o.name);
    if (!p)
      throw UsageError(flag + ": program '" + program.name + "' has no parameter '" + o.name +
                       "'; its inputs are " + input_names(params));
    if (!p->is_input())
      throw UsageError(flag + ": '" + o.name +
                       "' is an Out parameter, which the program writes; --input takes the "
                       "In/InOut parameters " +
                       input_names(params));
    if (!given.emplace(o.name, o.file).second)
      throw UsageError("--input " + o.name + " is given twice");
  }

  ProgramArguments args;
  for (const ParamInfo& p : params) {
    std::string source;
    if (!p.is_input()) {
      args.tensors.push_back(allocate_output(program, p, source));
      args.sources.push_back(source);
      continue;
    }
    const auto it = given.find(p.name);
    if (it != given.end()) {
      const std::string what = "input '" + p.name + "' (--input " + p.name + "=" +
                               it->second.string() + ")";
      Tensor t = read_input(it->second, what);
      if (!matches(p, t))
        throw UsageError(what + ": " + it->second.string() + " holds " + t.describe() +
                         ", but parameter '" + p.name + "' is " + p.type_string());
      args.tensors.push_back(std::move(t));
      args.sources.push_back(it->second.string());
      continue;
    }
    if (!program.golden)
      throw UsageError("no data for input '" + p.name + "' (" + p.type_string() + "): " +
                       program.dir.string() + " has no golden/; pass --input " + p.name +
                       "=FILE.npy");
    const std::string rel = std::string(kGoldenInputsDir) + "/" + p.name + ".npy";
    const std::string display = sidecar_display(program.dir, rel);
    Tensor t = read_input(GoldenSpec::input_path(program.dir, p.name), "input '" + p.name + "'");
    if (!matches(p, t))
      throw ArtifactError(display, "",
                          "holds " + t.describe() + ", but parameter '" + p.name + "' is " +
                              p.type_string(),
                          recompile_remedy(program.dir));
    args.tensors.push_back(std::move(t));
    args.sources.push_back(rel);
  }
  return args;
}

}  // namespace pypto::coord
