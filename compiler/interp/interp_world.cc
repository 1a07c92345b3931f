#include "compiler/interp/interp_world.h"

#include "pypto/error.h"

namespace pypto::compiler::interp {

namespace {
// Deadlock reports list at most this many ranks.
constexpr int64_t kMaxReportedRanks = 16;
}  // namespace

const char* compare_name(Compare cmp) {
  switch (cmp) {
    case Compare::kEq:
      return "eq";
    case Compare::kNe:
      return "ne";
    case Compare::kGt:
      return "gt";
    case Compare::kGe:
      return "ge";
    case Compare::kLt:
      return "lt";
    case Compare::kLe:
      return "le";
  }
  return "?";
}

bool compare(int64_t value, Compare cmp, int64_t expected) {
  switch (cmp) {
    case Compare::kEq:
      return value == expected;
    case Compare::kNe:
      return value != expected;
    case Compare::kGt:
      return value > expected;
    case Compare::kGe:
      return value >= expected;
    case Compare::kLt:
      return value < expected;
    case Compare::kLe:
      return value <= expected;
  }
  return false;
}

World::World(int64_t ranks, std::chrono::milliseconds timeout)
    : states_(static_cast<size_t>(ranks)),
      timeout_(timeout),
      deadline_(std::chrono::steady_clock::now() + timeout) {}

WindowRef World::add_window(DType dtype, const Shape& shape) {
  WindowBuffer w;
  w.dtype = dtype;
  w.shape = shape;
  for (int64_t r = 0; r < ranks(); ++r) w.copies.push_back(Tensor::empty(dtype, shape));
  windows_.push_back(std::move(w));
  return WindowRef{static_cast<int32_t>(windows_.size() - 1)};
}

void World::name_window(WindowRef w, const std::string& name) {
  WindowBuffer& buffer = windows_.at(static_cast<size_t>(w.id));
  if (buffer.name.empty()) buffer.name = name;
}

const WindowBuffer& World::window(WindowRef w) const {
  return windows_.at(static_cast<size_t>(w.id));
}

void World::wait(int64_t rank, WindowRef w, const Shape& cell, const WaitSite& site) {
  const WindowBuffer& buffer = window(w);
  const TensorRef copy = TensorRef::of(buffer.copies[static_cast<size_t>(rank)]);
  RankState& me = states_[static_cast<size_t>(rank)];
  std::unique_lock lock(mu_);
  while (true) {
    if (aborted_) throw Aborted{};
    const int64_t value = read_int(copy.element(cell), buffer.dtype);
    if (compare(value, site.cmp, site.expected)) {
      me.waiting = false;
      return;
    }
    me.waiting = true;
    me.checked_generation = generation_;
    me.site = site;
    me.last_value = value;
    if (stuck_locked()) {
      const std::string report = deadlock_report_locked();
      me.waiting = false;
      auto error = std::make_exception_ptr(ProgramError(report));
      fail_locked(error);
      std::rethrow_exception(error);
    }
    if (cv_.wait_until(lock, deadline_) == std::cv_status::timeout &&
        std::chrono::steady_clock::now() >= deadline_ && !aborted_) {
      auto error = std::make_exception_ptr(ProgramError(deadline_report_locked()));
      me.waiting = false;
      fail_locked(error);
      std::rethrow_exception(error);
    }
  }
}

void World::finish(int64_t rank) {
  std::lock_guard lock(mu_);
  RankState& me = states_[static_cast<size_t>(rank)];
  me.finished = true;
  me.waiting = false;
  if (!aborted_ && stuck_locked())
    fail_locked(std::make_exception_ptr(ProgramError(deadlock_report_locked())));
}

void World::fail(std::exception_ptr error) {
  std::lock_guard lock(mu_);
  fail_locked(std::move(error));
}

std::exception_ptr World::failure() {
  std::lock_guard lock(mu_);
  return failure_;
}

void World::check_progress() {
  if (aborted_) throw Aborted{};
  if (std::chrono::steady_clock::now() < deadline_) return;
  std::lock_guard lock(mu_);
  if (aborted_) throw Aborted{};
  auto error = std::make_exception_ptr(ProgramError(deadline_report_locked()));
  fail_locked(error);
  std::rethrow_exception(error);
}

bool World::stuck_locked() const {
  bool any_waiting = false;
  for (const RankState& s : states_) {
    if (s.finished) continue;
    if (!s.waiting || s.checked_generation != generation_) return false;
    any_waiting = true;
  }
  return any_waiting;
}

std::string World::wait_text(const RankState& s) {
  return s.site.cell + " " + compare_name(s.site.cmp) + " " + std::to_string(s.site.expected) +
         " (last value " + std::to_string(s.last_value) + ")";
}

// The first waiting rank, or nullptr.
const World::RankState* World::first_waiting_locked(int64_t& rank) const {
  for (size_t r = 0; r < states_.size(); ++r) {
    if (states_[r].waiting) {
      rank = static_cast<int64_t>(r);
      return &states_[r];
    }
  }
  return nullptr;
}

std::string World::rank_list_locked() const {
  std::string out;
  for (size_t r = 0; r < states_.size(); ++r) {
    if (static_cast<int64_t>(r) == kMaxReportedRanks) {
      out +=
          "\n  ... and " + std::to_string(static_cast<int64_t>(states_.size() - r)) + " more ranks";
      break;
    }
    const RankState& s = states_[r];
    out += "\n  rank " + std::to_string(r) + ": " +
           (s.waiting    ? s.site.where + ": waits for " + wait_text(s)
            : s.finished ? std::string("finished")
                         : std::string("running"));
  }
  return out;
}

std::string World::deadlock_report_locked() const {
  int64_t rank = 0;
  const RankState* first = first_waiting_locked(rank);
  return first->site.where + ": deadlock: rank " + std::to_string(rank) +
         " waits forever in kernel '" + first->site.kernel + "' for " + wait_text(*first) +
         ": every rank has finished or is blocked in a wait, so no cell can change" +
         rank_list_locked();
}

std::string World::deadline_report_locked() const {
  const std::string deadline =
      "the interpreter's deadline of " + std::to_string(timeout_.count()) + " ms";
  int64_t rank = 0;
  if (const RankState* first = first_waiting_locked(rank)) {
    return first->site.where + ": rank " + std::to_string(rank) + " still waits in kernel '" +
           first->site.kernel + "' for " + wait_text(*first) + " after " + deadline +
           rank_list_locked();
  }
  return "the program did not finish within " + deadline + rank_list_locked();
}

void World::fail_locked(std::exception_ptr error) {
  if (!failure_) failure_ = std::move(error);
  aborted_ = true;
  cv_.notify_all();
}

}  // namespace pypto::compiler::interp
