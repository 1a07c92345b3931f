#include "launch/mpirun_command.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>

#include "launch/executable.h"
#include "launch/hostfile.h"
#include "launch/rank_binary.h"
#include "pypto/error.h"

#ifndef PYPTO_BUILD_MPIEXEC
#define PYPTO_BUILD_MPIEXEC ""
#endif

namespace pypto::launch {

namespace fs = std::filesystem;

namespace {

constexpr const char* kInstallHint =
    "install Open MPI (Debian: apt-get install openmpi-bin) or set PYPTO_MPIRUN to its mpirun";

// "--bind-to=none" -> "bind-to", "-np" -> "np"; "" for a word that is not an option.
std::string_view option_name(std::string_view arg) {
  if (arg.size() < 2 || arg[0] != '-') return {};
  arg.remove_prefix(arg[1] == '-' ? 2 : 1);
  return arg.substr(0, arg.find('='));
}

// The value of the option at args[i]: after '=' or the next word.
std::string_view option_value(const std::vector<std::string>& args, size_t i) {
  std::string_view arg = args[i];
  if (size_t eq = arg.find('='); eq != std::string_view::npos) return arg.substr(eq + 1);
  return i + 1 < args.size() ? std::string_view(args[i + 1]) : std::string_view();
}

bool any_option(const std::vector<std::string>& args,
                std::initializer_list<std::string_view> names) {
  return std::any_of(args.begin(), args.end(), [&](const std::string& arg) {
    const std::string_view name = option_name(arg);
    return std::find(names.begin(), names.end(), name) != names.end();
  });
}

// An MCA parameter set on the command line (--mca NAME VALUE) or in the
// environment mpirun will see (OMPI_MCA_NAME).
bool mca_set(const MpirunOptions& options, std::string_view param) {
  const auto& args = options.mpirun_args;
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    const std::string_view name = option_name(args[i]);
    if ((name == "mca" || name == "gmca") && args[i + 1] == param) return true;
  }
  const std::string env_name = "OMPI_MCA_" + std::string(param);
  if (std::getenv(env_name.c_str())) return true;
  return std::any_of(options.env.begin(), options.env.end(), [&](const std::string& entry) {
    return entry.compare(0, env_name.size() + 1, env_name + "=") == 0;
  });
}

bool mentions_oversubscribe(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view name = option_name(args[i]);
    if (name == "oversubscribe" || name == "nooversubscribe") return true;
    if (name == "map-by") {
      std::string value(option_value(args, i));
      std::transform(value.begin(), value.end(), value.begin(),
                     [](unsigned char c) { return std::toupper(c); });
      if (value.find("OVERSUBSCRIBE") != std::string::npos) return true;
    }
  }
  return false;
}

void check_env_entry(const std::string& entry) {
  const size_t eq = entry.find('=');
  const bool valid_name =
      eq != std::string::npos && eq > 0 && !std::isdigit(static_cast<unsigned char>(entry[0])) &&
      std::all_of(entry.begin(), entry.begin() + static_cast<std::ptrdiff_t>(eq),
                  [](unsigned char c) { return std::isalnum(c) || c == '_'; });
  if (!valid_name)
    throw UsageError("environment entry '" + entry +
                     "' for the ranks is not NAME=VALUE with NAME made of letters, digits and _");
}

}  // namespace

bool mpirun_args_name_hosts(const std::vector<std::string>& mpirun_args) {
  return any_option(mpirun_args,
                    {"host", "H", "hostfile", "machinefile", "default-hostfile", "rankfile", "rf"});
}

fs::path build_time_mpirun() { return fs::path(PYPTO_BUILD_MPIEXEC); }

fs::path find_mpirun(const std::optional<fs::path>& explicit_path) {
  auto required = [](const fs::path& path, const std::string& origin) {
    if (auto found = resolve_executable(path)) return *found;
    throw ToolError(origin + " names " + path.string() + ", which is not an executable file; " +
                    kInstallHint);
  };
  if (explicit_path) return required(*explicit_path, "--mpirun");
  if (const char* env = std::getenv("PYPTO_MPIRUN"); env && *env)
    return required(env, "PYPTO_MPIRUN");
  if (const fs::path built = build_time_mpirun(); !built.empty())
    if (auto found = resolve_executable(built)) return *found;
  if (auto found = resolve_executable("mpirun")) return *found;
  throw ToolError("cannot find mpirun (neither PYPTO_MPIRUN, nor " +
                  (build_time_mpirun().empty() ? std::string("a configure-time mpiexec")
                                               : build_time_mpirun().string()) +
                  ", nor mpirun in PATH); " + kInstallHint);
}

MpirunCommand mpirun_command(const MpirunOptions& options) {
  if (options.world < 1)
    throw InfraError("cannot launch " + std::to_string(options.world) +
                     " ranks: the world size must be at least 1");
  if (options.coord_endpoint.empty())
    throw InfraError("internal error: no coordinator endpoint to pass to the ranks (--coord)");
  const auto& user = options.mpirun_args;
  if (any_option(user, {"n", "np", "c"}))
    throw UsageError("--mpirun-args sets the number of processes; the world size (" +
                     std::to_string(options.world) +
                     ") comes from the build directory, remove -n/-np/-c from --mpirun-args");
  const bool user_hostfile = any_option(user, {"hostfile", "machinefile", "default-hostfile"});
  if (options.hostfile && user_hostfile)
    throw UsageError(
        "the hostfile is given twice, by --hostfile and inside --mpirun-args; keep "
        "one");
  for (const auto& entry : options.env) check_env_entry(entry);

  MpirunCommand command;
  command.argv.push_back(find_mpirun(options.mpirun).string());
  const fs::path rank = find_rank_binary(options.rank_binary);

  if (::geteuid() == 0) {
    if (!any_option(user, {"allow-run-as-root"})) command.argv.push_back("--allow-run-as-root");
    command.env.push_back("OMPI_ALLOW_RUN_AS_ROOT=1");
    command.env.push_back("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1");
  }

  if (!mentions_oversubscribe(user) && !mca_set(options, "rmaps_base_oversubscribe")) {
    const bool single_host =
        !options.hostfile && !user_hostfile && !any_option(user, {"host", "H"});
    bool oversubscribe = single_host;
    if (options.hostfile) {
      const std::optional<long> slots = hostfile_slots(*options.hostfile);
      oversubscribe = slots && *slots < options.world;
    }
    if (oversubscribe) command.argv.push_back("--oversubscribe");
  }

  const bool user_binds = any_option(user, {"bind-to", "bind-to-core", "bind-to-socket", "cpu-set",
                                            "cpu-list", "rankfile", "rf"}) ||
                          mca_set(options, "hwloc_base_binding_policy");
  if (!user_binds) {
    command.argv.push_back("--bind-to");
    command.argv.push_back("none");
  }

  if (options.hostfile) {
    command.argv.push_back("--hostfile");
    command.argv.push_back(options.hostfile->string());
  }
  for (const auto& entry : options.env) {
    command.argv.push_back("-x");
    command.argv.push_back(entry.substr(0, entry.find('=')));
    command.env.push_back(entry);
  }
  command.argv.insert(command.argv.end(), user.begin(), user.end());
  command.argv.push_back("-n");
  command.argv.push_back(std::to_string(options.world));
  command.argv.push_back(rank.string());
  command.argv.push_back("--coord");
  command.argv.push_back(options.coord_endpoint);
  command.argv.insert(command.argv.end(), options.agent_args.begin(), options.agent_args.end());
  return command;
}

std::vector<std::string> mpirun_argv(const MpirunOptions& options) {
  return mpirun_command(options).argv;
}

}  // namespace pypto::launch
