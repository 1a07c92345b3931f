#include "launch/mpirun_notice.h"

#include <regex>

namespace pypto::launch {

namespace {

// A block longer than this is no notice (agents' logs between two dashed lines).
constexpr size_t kMaxBlock = 4096;

bool is_separator(std::string_view line) {
  return line.size() >= 10 && line.find_first_not_of('-') == std::string_view::npos;
}

}  // namespace

std::optional<RankEnded> parse_mpirun_notice(const std::string& text) {
  static const std::regex signalled(
      "\\b(mpirun|mpiexec|orterun|prterun) noticed that process rank ([0-9]+) with PID "
      "[0-9]+ on node \\S+ exited on signal ([0-9]+)[^.]*\\.");
  static const std::regex exited(
      "\\b(mpirun|mpiexec|orterun|prterun) detected that one or more processes exited with "
      "non-zero status.*Process name: *\\[\\[[0-9]+,[0-9]+\\],([0-9]+)\\] *Exit code: *([0-9]+)");
  // A rank that exited (with status 0) without MPI_Finalize, e.g. _exit(0) in a kernel.
  static const std::regex improper(
      "\\b(mpirun|mpiexec|orterun|prterun) has exited due to process rank ([0-9]+) with PID "
      "[0-9]+ on node \\S+ exiting improperly");
  std::smatch m;
  RankEnded ended;
  if (std::regex_search(text, m, improper)) {
    ended.rank = std::stoi(m[2].str());
    ended.exit_code = 0;
    ended.improper = true;
  } else if (std::regex_search(text, m, signalled)) {
    ended.rank = std::stoi(m[2].str());
    ended.signal = std::stoi(m[3].str());
  } else if (std::regex_search(text, m, exited)) {
    ended.rank = std::stoi(m[2].str());
    ended.exit_code = std::stoi(m[3].str());
  } else {
    return std::nullopt;
  }
  ended.notice = m[0].str();
  return ended;
}

void MpirunNotices::add_line(std::string_view line) {
  std::lock_guard lock(mutex_);
  if (first_) return;
  if (is_separator(line)) {
    block_.clear();
    return;
  }
  // Wrapped text joins with one space; indentation is not part of it.
  const size_t begin = line.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return;
  if (!block_.empty()) block_ += ' ';
  block_.append(line.substr(begin));
  if (block_.size() > kMaxBlock) {
    block_.clear();
    return;
  }
  first_ = parse_mpirun_notice(block_);
}

std::optional<RankEnded> MpirunNotices::first() const {
  std::lock_guard lock(mutex_);
  return first_;
}

bool is_nonzero_exit_banner(std::string_view block) {
  // Wrapped at any space: compare with the whitespace collapsed.
  std::string text;
  for (char c : block) {
    const bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (space && (text.empty() || text.back() == ' ')) continue;
    text += space ? ' ' : c;
  }
  return text.find("Primary job terminated normally, but") != std::string::npos ||
         text.find("detected that one or more processes exited with non-zero status") !=
             std::string::npos;
}

}  // namespace pypto::launch
