#include "artifact/include_closure.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "common/fs_util.h"

namespace pypto {

namespace fs = std::filesystem;

namespace {

constexpr int kMaxDepth = 200;

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Replaces comments with spaces (newlines kept, so line numbers hold) and
// joins backslash-continued lines. String, character and raw string literals
// are copied through, so a "/*" inside a literal does not start a comment.
std::string strip_comments(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  size_t i = 0;
  const size_t n = in.size();
  auto at = [&](size_t k) { return k < n ? in[k] : '\0'; };
  // Newlines swallowed by line splices, emitted after the logical line so
  // later line numbers stay right.
  size_t swallowed = 0;
  while (i < n) {
    char c = in[i];
    if (c == '\\' && at(i + 1) == '\n') {
      i += 2;
      ++swallowed;
      continue;
    }
    if (c == '\n') {
      out.append(1 + swallowed, '\n');
      swallowed = 0;
      ++i;
      continue;
    }
    if (c == '/' && at(i + 1) == '/') {
      while (i < n && in[i] != '\n') {
        if (in[i] == '\\' && at(i + 1) == '\n') {  // a spliced // comment continues
          ++swallowed;
          ++i;
        }
        ++i;
      }
      continue;
    }
    if (c == '/' && at(i + 1) == '*') {
      i += 2;
      out += ' ';
      while (i < n && !(in[i] == '*' && at(i + 1) == '/')) {
        if (in[i] == '\n') out += '\n';
        ++i;
      }
      i = std::min(n, i + 2);
      continue;
    }
    if (c == '"' && i > 0 && in[i - 1] == 'R' &&
        (i < 2 || !ident_char(in[i - 2]) || in[i - 2] == '8' || in[i - 2] == 'u' ||
         in[i - 2] == 'U' || in[i - 2] == 'L')) {
      // Raw string R"delim( ... )delim": copied as is.
      size_t open = in.find('(', i + 1);
      if (open != std::string_view::npos && open - i - 1 <= 16) {
        std::string close = ")" + std::string(in.substr(i + 1, open - i - 1)) + "\"";
        size_t end = in.find(close, open + 1);
        end = (end == std::string_view::npos) ? n : end + close.size();
        out.append(in.substr(i, end - i));
        i = end;
        continue;
      }
    }
    // A quote after a digit is a digit separator (1'000), not a literal.
    if (c == '"' ||
        (c == '\'' && !(i > 0 && std::isalnum(static_cast<unsigned char>(in[i - 1]))))) {
      out += c;
      ++i;
      while (i < n && in[i] != c && in[i] != '\n') {
        if (in[i] == '\\' && i + 1 < n) out += in[i++];
        out += in[i++];
      }
      if (i < n && in[i] == c) out += in[i++];
      continue;
    }
    out += c;
    ++i;
  }
  return out;
}

struct Walker {
  std::vector<fs::path> include_dirs;  // absolute, normalized
  fs::path source_dir;
  std::set<fs::path> visited;
  IncludeClosure closure;

  std::string name_of(const fs::path& path) const {
    for (size_t i = 0; i < include_dirs.size(); ++i) {
      fs::path rel = path.lexically_relative(include_dirs[i]);
      if (!rel.empty() && *rel.begin() != "..") return std::to_string(i) + ":" + rel.string();
    }
    return "src:" + path.lexically_relative(source_dir).string();
  }

  static bool is_file(const fs::path& path) {
    std::error_code ec;
    return fs::is_regular_file(path, ec);
  }

  static fs::path identity_of(const fs::path& path) {
    std::error_code ec;
    fs::path canonical = fs::weakly_canonical(path, ec);
    return ec ? path : canonical;
  }

  bool fail(const fs::path& file, int line, const std::string& problem) {
    closure.failure = file.string() + ":" + std::to_string(line) + ": " + problem;
    return false;
  }

  std::string dirs_text(const fs::path& includer_dir, bool quoted) const {
    std::vector<fs::path> dirs;
    if (quoted) dirs.push_back(includer_dir);
    for (const auto& dir : include_dirs)
      if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
    std::string text;
    for (const auto& dir : dirs) text += (text.empty() ? "" : ", ") + dir.string();
    return text;
  }

  // Adds `path` (found by resolution) and everything it includes.
  bool visit(const fs::path& path, int depth, const fs::path& from, int from_line) {
    if (!visited.insert(identity_of(path)).second) return true;
    std::string content;
    try {
      content = read_file(path);
    } catch (const std::exception& e) {
      return fail(from, from_line, std::string("cannot read included file: ") + e.what());
    }
    closure.files.push_back({name_of(path), path, content});
    return walk(path, closure.files.back().content, depth);
  }

  bool walk(const fs::path& file, const std::string& content, int depth) {
    if (depth > kMaxDepth)
      return fail(file, 1, "#include nesting deeper than " + std::to_string(kMaxDepth));
    const fs::path includer_dir = file.parent_path();
    // Copy the directives first: `visit` appends to closure.files, which owns `content`.
    const std::vector<IncludeDirective> directives = scan_includes(content);
    for (const auto& d : directives) {
      if (d.kind == IncludeDirective::Kind::kComputed)
        return fail(file, d.line,
                    "computed #include " + d.target + " cannot be followed for the cache key");
      const bool quoted = d.kind == IncludeDirective::Kind::kQuoted;
      std::vector<fs::path> candidates;
      if (quoted && !d.include_next) candidates.push_back(includer_dir / d.target);
      for (const auto& dir : include_dirs) candidates.push_back(dir / d.target);

      bool found = false;
      for (const auto& candidate : candidates) {
        std::error_code ec;
        if (!fs::exists(candidate, ec)) continue;
        fs::path normal = candidate.lexically_normal();
        if (!is_file(normal))
          return fail(file, d.line,
                      "included " + normal.string() + " is not a readable regular file");
        if (!visit(normal, depth + 1, file, d.line)) return false;
        found = true;
        // #include_next takes a later match: follow every match (a superset).
        if (!d.include_next) break;
      }
      if (!found && quoted && !d.include_next)
        return fail(file, d.line,
                    "#include \"" + d.target + "\" not found in " + dirs_text(includer_dir, true));
    }
    return true;
  }
};

}  // namespace

std::vector<IncludeDirective> scan_includes(std::string_view text) {
  std::vector<IncludeDirective> directives;
  const std::string code = strip_comments(text);
  size_t pos = 0;
  int line = 0;
  while (pos <= code.size()) {
    size_t end = code.find('\n', pos);
    if (end == std::string::npos) end = code.size();
    ++line;
    std::string_view l(code.data() + pos, end - pos);
    pos = end + 1;

    size_t i = 0;
    auto skip_space = [&] {
      while (i < l.size() &&
             (l[i] == ' ' || l[i] == '\t' || l[i] == '\r' || l[i] == '\f' || l[i] == '\v'))
        ++i;
    };
    skip_space();
    if (i >= l.size() || l[i] != '#') continue;
    ++i;
    skip_space();
    size_t word_start = i;
    while (i < l.size() && ident_char(l[i])) ++i;
    std::string_view word = l.substr(word_start, i - word_start);
    if (word != "include" && word != "include_next" && word != "import") continue;
    skip_space();
    IncludeDirective d{IncludeDirective::Kind::kComputed, "", line, word == "include_next"};
    if (i < l.size() && (l[i] == '"' || l[i] == '<')) {
      char close = l[i] == '"' ? '"' : '>';
      size_t stop = l.find(close, i + 1);
      if (stop != std::string_view::npos) {
        d.kind = close == '"' ? IncludeDirective::Kind::kQuoted : IncludeDirective::Kind::kAngle;
        d.target = std::string(l.substr(i + 1, stop - i - 1));
        directives.push_back(d);
        continue;
      }
    }
    std::string_view rest = l.substr(i);
    while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.back())))
      rest.remove_suffix(1);
    d.target = std::string(rest);
    directives.push_back(d);
  }
  return directives;
}

IncludeClosure include_closure(const fs::path& source, const std::vector<fs::path>& include_dirs) {
  Walker walker;
  std::error_code ec;
  const fs::path abs_source = fs::absolute(source, ec).lexically_normal();
  for (const auto& dir : include_dirs)
    walker.include_dirs.push_back(fs::absolute(dir, ec).lexically_normal());
  walker.source_dir = abs_source.parent_path();
  walker.visited.insert(Walker::identity_of(abs_source));
  try {
    walker.closure.source_content = read_file(abs_source);
  } catch (const std::exception& e) {
    walker.closure.failure = std::string("cannot read the source: ") + e.what();
    return std::move(walker.closure);
  }
  // Walk a copy: closure.source_content stays the caller's.
  const std::string content = walker.closure.source_content;
  if (!walker.walk(abs_source, content, 0)) walker.closure.files.clear();
  return std::move(walker.closure);
}

}  // namespace pypto
