#include "compiler/frontend/loader.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "compiler/frontend/parser.h"

namespace pypto::compiler {

namespace fs = std::filesystem;

FileReader disk_reader() {
  return [](const std::string& path) -> std::optional<std::string> {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) return std::nullopt;
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) return std::nullopt;
    return ss.str();
  };
}

namespace {

constexpr int kMaxImportDepth = 64;

class Loader {
 public:
  Loader(const LoadOptions& options, SourceManager& sources, DiagnosticEngine& diags)
      : options_(options), sources_(sources), diags_(diags) {}

  Program run(const std::string& root) {
    const std::string key = fs::path(root).lexically_normal().string();
    std::optional<std::string> text = options_.read(key);
    if (!text) {
      diags_.error(Span{}, "cannot read '" + root + "'");
      return std::move(program_);
    }
    load(key, std::move(*text), 0);
    return std::move(program_);
  }

 private:
  void load(const std::string& path, std::string text, int depth) {
    state_[path] = kLoading;
    stack_.push_back(path);
    const int32_t id = sources_.add(path, std::move(text));
    Module module = parse_file(sources_, id, diags_);
    for (const Import& imp : module.imports) {
      if (depth >= kMaxImportDepth) {
        diags_.error(imp.span,
                     "imports nest more than " + std::to_string(kMaxImportDepth) + " files deep");
        break;
      }
      std::optional<std::string> found_text;
      const std::string target = resolve(path, imp.path, found_text);
      if (target.empty()) {
        std::string where = "next to '" + path + "'";
        for (const std::string& dir : options_.lib_dirs) where += ", in '" + dir + "'";
        diags_.error(imp.span,
                     "cannot find imported file '" + imp.path + "' (looked " + where + ")");
        continue;
      }
      auto it = state_.find(target);
      if (it != state_.end() && it->second == kLoaded) continue;
      if (it != state_.end() && it->second == kLoading) {
        std::string cycle;
        bool in = false;
        for (const std::string& p : stack_) {
          if (p == target) in = true;
          if (in) cycle += p + " -> ";
        }
        diags_.error(imp.span, "import cycle: " + cycle + target);
        continue;
      }
      load(target, std::move(*found_text), depth + 1);
    }
    stack_.pop_back();
    state_[path] = kLoaded;
    program_.modules.push_back(std::move(module));
  }

  // The normalized path of the first readable candidate (its text in `text`), or "".
  std::string resolve(const std::string& importer, const std::string& name,
                      std::optional<std::string>& text) {
    if (name.empty()) return "";
    std::vector<fs::path> candidates;
    const fs::path p(name);
    if (p.is_absolute()) {
      candidates.push_back(p);
    } else {
      candidates.push_back(fs::path(importer).parent_path() / p);
      for (const std::string& dir : options_.lib_dirs) candidates.push_back(fs::path(dir) / p);
    }
    for (const fs::path& c : candidates) {
      const std::string key = c.lexically_normal().string();
      if (state_.count(key)) return key;  // already loaded or loading: no need to read again
      text = options_.read(key);
      if (text) return key;
    }
    return "";
  }

  enum State { kLoading, kLoaded };
  const LoadOptions& options_;
  SourceManager& sources_;
  DiagnosticEngine& diags_;
  Program program_;
  std::map<std::string, State> state_;
  std::vector<std::string> stack_;
};

}  // namespace

Program load_program(const std::string& root_path, const LoadOptions& options,
                     SourceManager& sources, DiagnosticEngine& diags) {
  return Loader(options, sources, diags).run(root_path);
}

}  // namespace pypto::compiler
