#include "coordinator/stall_diagnosis.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "common/rank_list.h"

namespace pypto::coord {

namespace {

enum class Doing { kNoAnswer, kIdle, kFinished, kFailed, kWaiting, kInKernel, kOrchestrating };

const char* doing_name(Doing doing) {
  switch (doing) {
    case Doing::kNoAnswer: return "no_answer";
    case Doing::kIdle: return "idle";
    case Doing::kFinished: return "finished";
    case Doing::kFailed: return "failed";
    case Doing::kWaiting: return "waiting";
    case Doing::kInKernel: return "in_kernel";
    case Doing::kOrchestrating: return "orchestrating";
  }
  return "?";
}

// "2.0 s", as the wait's own message says it.
std::string seconds_of(int64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", static_cast<double>(std::max<int64_t>(ns, 0)) / 1e9);
  return text;
}

// The text after a leading "rank N: ": the rank is named by the line already.
std::string without_rank_prefix(const std::string& error, int rank) {
  const std::string prefix = "rank " + std::to_string(rank) + ": ";
  return error.rfind(prefix, 0) == 0 ? error.substr(prefix.size()) : error;
}

struct RankView {
  int rank = 0;
  Doing doing = Doing::kNoAnswer;
  const wire::RankState* state = nullptr;
  bool gone = false;
  // kWaiting: the wait (or barrier) and whom it waits for.
  const wire::WireCommOp* wait = nullptr;
  bool expired = false;        // its deadline passed (the dispatch failed with it)
  std::vector<int> waits_for;  // empty: nobody known
  std::string cell;            // "'signal'[5, 0]"
  std::vector<int64_t> index;  // the cell's index in the window's shape
};

const WindowInfo* window_named(const std::vector<WindowInfo>& windows, const std::string& name) {
  for (const WindowInfo& w : windows)
    if (w.name == name) return &w;
  return nullptr;
}

// The last wait or barrier among `ops` that is still in progress (`in_flight`)
// or that failed.
const wire::WireCommOp* last_wait(const std::vector<wire::WireCommOp>& ops, bool in_flight) {
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    if (it->kind != "wait" && it->kind != "barrier") continue;
    if (in_flight ? it->end_ns == 0 : !it->ok) return &*it;
  }
  return nullptr;
}

void place_wait(RankView& view, const std::vector<WindowInfo>& windows, int world) {
  const wire::WireCommOp& op = *view.wait;
  if (op.kind == "barrier") {
    view.cell = "a barrier";
    return;
  }
  const WindowInfo* info = window_named(windows, op.window);
  view.cell = "'" + op.window + "'";
  if (!info || info->shape.empty() || op.cell < 0) {
    view.cell += " cell " + std::to_string(op.cell);
    return;
  }
  int64_t rest = op.cell;
  view.index.assign(info->shape.size(), 0);
  for (size_t d = info->shape.size(); d-- > 0;) {
    view.index[d] = rest % info->shape[d];
    rest /= info->shape[d];
  }
  view.cell += "[";
  for (size_t d = 0; d < view.index.size(); ++d)
    view.cell += (d ? ", " : "") + std::to_string(view.index[d]);
  view.cell += "]";
  // A [WORLD, ...] flag window: row p is rank p's.
  if (info->shape[0] == world && view.index[0] >= 0 && view.index[0] < world)
    view.waits_for = {static_cast<int>(view.index[0])};
}

RankView view_of(int rank, const RankStateReport& report, const std::vector<WindowInfo>& windows,
                 int world) {
  RankView view;
  view.rank = rank;
  view.gone = report.gone;
  if (!report.state) return view;
  const wire::RankState& s = *report.state;
  view.state = &s;
  if (s.running) {
    view.wait = last_wait(s.comm_ops, true);
  } else if (!s.ok) {
    view.wait = last_wait(s.comm_ops, false);
    view.expired = view.wait != nullptr;
  }
  if (view.wait) {
    view.doing = Doing::kWaiting;
    place_wait(view, windows, world);
  } else if (s.running) {
    view.doing = s.tasks.empty() ? Doing::kOrchestrating : Doing::kInKernel;
  } else if (!s.ok) {
    view.doing = Doing::kFailed;
  } else {
    view.doing = s.dispatch < 0 ? Doing::kIdle : Doing::kFinished;
  }
  return view;
}

std::string dispatch_text(const wire::RankState& s) {
  return "dispatch d" + std::to_string(s.dispatch) + " (program '" + s.program + "')";
}

std::string wait_text(const RankView& v) {
  const wire::WireCommOp& op = *v.wait;
  if (op.kind == "barrier") return "waits in a barrier";
  return "waits on " + v.cell + " " + op.mode + " " + std::to_string(op.value) + " (now " +
         std::to_string(op.observed) + ")";
}

std::string tasks_text(const wire::RankState& s) {
  const wire::WireRunningTask& t = s.tasks.front();
  std::string text = "kernel '" + t.kernel + "' (task " + std::to_string(t.task_id) + " on " +
                     t.core_type + " core " + std::to_string(t.core_id) + ") for " +
                     seconds_of(s.now_ns - t.start_ns);
  if (s.tasks.size() > 1) text += ", and " + std::to_string(s.tasks.size() - 1) + " more task(s)";
  return text;
}

// Whether rank `from`'s recent comm calls notified `waiter`'s cell of `wait`.
const wire::WireCommOp* notify_of(const RankView& from, const RankView& waiter) {
  if (!from.state) return nullptr;
  for (auto it = from.state->comm_ops.rbegin(); it != from.state->comm_ops.rend(); ++it)
    if (it->kind == "notify" && it->peer == waiter.rank && it->window == waiter.wait->window &&
        it->cell == waiter.wait->cell)
      return &*it;
  return nullptr;
}

std::string detail_of(const RankView& v, const std::vector<RankView>& views) {
  const std::string me = "rank " + std::to_string(v.rank) + ": ";
  switch (v.doing) {
    case Doing::kNoAnswer:
      return me + (v.gone ? "no answer (its process has ended)" : "no answer to the state query");
    case Doing::kIdle:
      return me + "has run no dispatch yet";
    case Doing::kFinished:
      return me + "finished " + dispatch_text(*v.state);
    case Doing::kFailed:
      return me + dispatch_text(*v.state) + " failed: " + without_rank_prefix(v.state->error, v.rank);
    case Doing::kInKernel:
      return me + "in " + dispatch_text(*v.state) + ", in " + tasks_text(*v.state);
    case Doing::kOrchestrating:
      return me + "in " + dispatch_text(*v.state) + ", no kernel running";
    case Doing::kWaiting: break;
  }
  const wire::WireCommOp& op = *v.wait;
  std::string text = me + (v.expired ? "waited" : "waits") + wait_text(v).substr(5);
  if (v.waits_for.size() == 1) {
    const int p = v.waits_for[0];
    text += p == v.rank ? " for itself" : " for rank " + std::to_string(p);
    if (const wire::WireCommOp* n = notify_of(views[static_cast<size_t>(p)], v))
      text += " (which notified it: " + n->mode + " " + std::to_string(n->value) + ")";
  }
  const int64_t end = op.end_ns ? op.end_ns : v.state->now_ns;
  if (v.expired)
    return text + " until its deadline, " + seconds_of(end - op.start_ns) + ": " +
           without_rank_prefix(v.state->error, v.rank);
  return text + ", for " + seconds_of(end - op.start_ns) + " so far";
}

// Why rank `c`, at the end of a chain of waits, is the likely culprit.
std::string culprit_text(const RankView& c, const std::vector<RankView>& views) {
  switch (c.doing) {
    case Doing::kNoAnswer:
      return c.gone ? "its process has ended" : "it does not answer";
    case Doing::kIdle:
      return "it has run no dispatch yet";
    case Doing::kFailed:
      return dispatch_text(*c.state) + " failed on it: " + without_rank_prefix(c.state->error, c.rank);
    case Doing::kInKernel:
      return "it is still in " + tasks_text(*c.state);
    case Doing::kOrchestrating:
      return "it is in " + dispatch_text(*c.state) + " but runs no kernel";
    case Doing::kWaiting:
      return "it " + wait_text(c) + ", which by the window's layout only it would notify";
    case Doing::kFinished: break;
  }
  // Who waits on it, and for which cells it never notified.
  std::vector<int> waiters;
  std::set<std::string> cells;
  bool notified = false;
  for (const RankView& v : views) {
    if (v.doing != Doing::kWaiting || v.waits_for != std::vector<int>{c.rank}) continue;
    waiters.push_back(v.rank);
    cells.insert(v.cell);
    notified = notified || notify_of(c, v) != nullptr;
  }
  std::string what;
  for (const std::string& cell : cells) what += (what.empty() ? "" : ", ") + cell;
  std::string text = "it finished " + dispatch_text(*c.state);
  if (waiters.empty()) return text;
  if (notified)
    return text + "; its notify of " + what + " did not satisfy rank(s) " + rank_list(waiters);
  text += " without notifying " + what + " on rank" + (waiters.size() > 1 ? "s " : " ") +
          rank_list(waiters);
  const size_t kept = c.state->comm_ops.size();
  if (c.state->comm_ops_recorded > kept)
    text += " (among its last " + std::to_string(kept) + " comm calls)";
  return text;
}

Json op_json(const wire::WireCommOp& op) {
  Json j = {{"kind", op.kind}, {"task_id", op.task_id}, {"core_id", op.core_id},
            {"start_ns", op.start_ns}, {"end_ns", op.end_ns}, {"ok", op.ok}};
  if (!op.window.empty()) {
    j["window"] = op.window;
    j["cell"] = op.cell;
  }
  if (op.peer >= 0) j["peer"] = op.peer;
  if (!op.mode.empty()) {
    j["mode"] = op.mode;
    j["value"] = op.value;
  }
  if (op.kind == "wait") j["observed"] = op.observed;
  return j;
}

Json rank_json(const RankView& v, const std::string& detail) {
  Json j = {{"rank", v.rank}, {"state", doing_name(v.doing)}, {"detail", detail}};
  if (!v.state) return j;
  const wire::RankState& s = *v.state;
  j["dispatch"] = s.dispatch;
  j["program"] = s.program;
  if (!s.error.empty()) j["error"] = s.error;
  if (v.wait) {
    j["wait"] = op_json(*v.wait);
    j["wait"]["expired"] = v.expired;
    if (!v.index.empty()) j["wait"]["index"] = v.index;
    j["waits_for"] = v.waits_for;
  }
  Json tasks = Json::array();
  for (const wire::WireRunningTask& t : s.tasks)
    tasks.push_back({{"kernel", t.kernel}, {"task_id", t.task_id}, {"func_id", t.func_id},
                     {"core_id", t.core_id}, {"core_type", t.core_type},
                     {"running_ms", static_cast<double>(s.now_ns - t.start_ns) / 1e6}});
  j["tasks"] = tasks;
  Json ops = Json::array();
  for (const wire::WireCommOp& op : s.comm_ops) ops.push_back(op_json(op));
  j["comm_ops"] = ops;
  j["comm_ops_recorded"] = s.comm_ops_recorded;
  return j;
}

}  // namespace

std::string StallDiagnosis::text() const {
  std::string text = summary;
  for (const std::string& line : details) text += "\n  " + line;
  return text;
}

std::optional<StallDiagnosis> diagnose_stall(const std::vector<RankStateReport>& ranks,
                                             const std::vector<WindowInfo>& windows) {
  const int world = static_cast<int>(ranks.size());
  std::vector<RankView> views;
  for (int r = 0; r < world; ++r)
    views.push_back(view_of(r, ranks[static_cast<size_t>(r)], windows, world));
  const RankView* first_waiter = nullptr;
  for (const RankView& v : views)
    if (v.doing == Doing::kWaiting && !first_waiter) first_waiter = &v;
  if (!first_waiter) return std::nullopt;  // no wait to explain

  // Follow each wait to the rank at the end of its chain: one that does not
  // wait, or waits for itself. A chain that comes back is a deadlock.
  std::map<int, std::vector<int>> waiters_of;  // culprit -> the waiting ranks that lead to it
  std::set<int> in_cycle;
  for (const RankView& v : views) {
    if (v.doing != Doing::kWaiting) continue;
    if (v.wait->kind == "barrier") {
      // A barrier waits for every rank not in it.
      for (const RankView& other : views)
        if (other.doing != Doing::kWaiting || other.wait->kind != "barrier")
          waiters_of[other.rank].push_back(v.rank);
      continue;
    }
    if (v.waits_for.size() != 1) continue;
    std::vector<int> chain{v.rank};
    int at = v.waits_for[0];
    for (;;) {
      const RankView& next = views[static_cast<size_t>(at)];
      const bool waiting = next.doing == Doing::kWaiting && next.waits_for.size() == 1 &&
                           next.wait->kind != "barrier";
      if (!waiting || next.waits_for[0] == at) {
        waiters_of[at].push_back(v.rank);
        break;
      }
      if (std::find(chain.begin(), chain.end(), at) != chain.end()) {
        for (int r : chain) in_cycle.insert(r);
        break;
      }
      chain.push_back(at);
      at = next.waits_for[0];
    }
  }

  StallDiagnosis diagnosis;
  const wire::RankState& s = *first_waiter->state;
  diagnosis.summary = "dispatch d" + std::to_string(s.dispatch) + " of program '" + s.program +
                      "' stalled: ";
  std::vector<std::pair<int, int>> by_waiters;  // (waiters, culprit)
  for (const auto& [culprit, waiters] : waiters_of)
    by_waiters.emplace_back(static_cast<int>(waiters.size()), culprit);
  std::sort(by_waiters.begin(), by_waiters.end(),
            [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  std::string why;
  for (const auto& [count, culprit] : by_waiters) {
    diagnosis.culprits.push_back(culprit);
    if (!why.empty()) why += "; and rank " + std::to_string(culprit) + ": ";
    why += culprit_text(views[static_cast<size_t>(culprit)], views);
  }
  if (diagnosis.culprits.size() == 1) {
    diagnosis.summary += "rank " + std::to_string(diagnosis.culprits[0]) +
                         " is the likely culprit: " + why;
  } else if (!diagnosis.culprits.empty()) {
    diagnosis.summary += "the likely culprits are rank " + std::to_string(diagnosis.culprits[0]) +
                         ": " + why;
  }
  if (!in_cycle.empty()) {
    const std::vector<int> cycle(in_cycle.begin(), in_cycle.end());
    diagnosis.summary += std::string(diagnosis.culprits.empty() ? "" : "; ") + "rank(s) " +
                         rank_list(cycle) + " wait for each other (a deadlock)";
  }
  if (diagnosis.culprits.empty() && in_cycle.empty())
    diagnosis.summary += "no rank is known to notify what rank " +
                         std::to_string(first_waiter->rank) + " waits for";

  Json rank_entries = Json::array();
  for (const RankView& v : views) {
    std::string detail = detail_of(v, views);
    rank_entries.push_back(rank_json(v, detail));
    diagnosis.details.push_back(std::move(detail));
  }
  diagnosis.json = {{"summary", diagnosis.summary},
                    {"culprits", diagnosis.culprits},
                    {"deadlocked", std::vector<int>(in_cycle.begin(), in_cycle.end())},
                    {"ranks", std::move(rank_entries)}};
  return diagnosis;
}

}  // namespace pypto::coord
