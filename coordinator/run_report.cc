#include "coordinator/run_report.h"

#include <algorithm>
#include <functional>
#include <iomanip>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "artifact/build_paths.h"
#include "common/fs_util.h"
#include "common/log.h"
#include "coordinator/critical_path.h"

namespace pypto::coord {

namespace {

std::string escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string fixed(double value, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << value;
  return out.str();
}

std::string ms3(double ms) { return fixed(ms, 3); }

// A colour per kernel name, stable across pages.
std::string kernel_colour(const std::string& kernel) {
  static const char* palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                  "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return palette[std::hash<std::string>{}(kernel) % (sizeof(palette) / sizeof(palette[0]))];
}

const char* kStyle = R"(body{font-family:sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.5em}
.outcome{font-weight:bold;padding:0.1em 0.5em;border-radius:3px}
.PASS,.OK{background:#d4edda}.FAIL,.INFRA{background:#f8d7da}
pre{background:#f6f6f6;padding:0.6em;white-space:pre-wrap}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:0.2em 0.6em;text-align:right}
th{background:#eee}td.l,th.l{text-align:left}
svg text{font-size:11px;font-family:sans-serif}
.dispatch{fill:#9db4cc;stroke:#3b5b7d}.axis{stroke:#888}
.wait{fill:#d62728;opacity:0.75}.comm{stroke:#d62728;stroke-width:1;opacity:0.6}
tr.culprit td{background:#f8d7da;font-weight:bold}
)";

// The stall diagnosis (coordinator/stall_diagnosis.h) of a failed run: its
// summary, and a row per rank, the culprits' rows marked.
std::string stall_html(const Json& diagnosis) {
  std::set<int> culprits;
  for (const Json& c : diagnosis.value("culprits", Json::array())) culprits.insert(c.get<int>());
  std::ostringstream html;
  html << "<h2>Why it stalled</h2>\n<p id=\"stall-summary\">"
       << escape(diagnosis.value("summary", std::string())) << "</p>\n";
  html << "<table id=\"stall\">\n<tr><th>rank</th><th class=\"l\">state</th><th>waits for</th>"
          "<th class=\"l\">what it was doing</th></tr>\n";
  for (const Json& r : diagnosis.value("ranks", Json::array())) {
    const int rank = r.value("rank", -1);
    std::string waits_for;
    for (const Json& p : r.value("waits_for", Json::array()))
      waits_for += (waits_for.empty() ? "" : ", ") + std::to_string(p.get<int>());
    // The line without its leading "rank N: ": the first column says it.
    std::string detail = r.value("detail", std::string());
    if (const size_t colon = detail.find(": "); detail.rfind("rank ", 0) == 0 && colon != std::string::npos)
      detail = detail.substr(colon + 2);
    html << "<tr" << (culprits.count(rank) ? " class=\"culprit\"" : "") << "><td>" << rank
         << "</td><td class=\"l\">" << escape(r.value("state", std::string())) << "</td><td>"
         << escape(waits_for) << "</td><td class=\"l\">" << escape(detail) << "</td></tr>\n";
  }
  html << "</table>\n";
  return html.str();
}

// One bar of the picture, on the time line of the page (ns since its origin).
struct Bar {
  int rank;
  int lane;  // 0: the dispatches; 1 + i: the rank's i-th core
  int64_t start, end;
  std::string cls, colour, title;
};

// A line between two ranks' lanes: a notify and the wait it released.
struct Link {
  int from_rank, from_lane;
  int64_t from_t;
  int to_rank, to_lane;
  int64_t to_t;
  std::string title;
};

std::string svg_picture(const std::vector<Bar>& bars, const std::vector<Link>& links,
                        const std::map<int, std::string>& labels, const std::map<int, int>& lanes,
                        int64_t span_ns) {
  constexpr int kLeft = 150, kWidth = 1000, kDispatchLane = 14, kCoreLane = 7, kGap = 8, kTop = 20;
  std::map<int, int> row_y;
  int y = kTop;
  for (const auto& [rank, n] : lanes) {
    row_y[rank] = y;
    y += kDispatchLane + n * kCoreLane + kGap;
  }
  const int height = y + 10;
  const double scale = span_ns > 0 ? static_cast<double>(kWidth - kLeft - 10) / span_ns : 0;
  std::ostringstream svg;
  svg << "<svg id=\"timeline\" width=\"" << kWidth << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << kWidth << " " << height << "\" role=\"img\">\n";
  // Axis: five ticks in milliseconds.
  for (int i = 0; i <= 4; ++i) {
    const double x = kLeft + (kWidth - kLeft - 10) * i / 4.0;
    svg << "<line class=\"axis\" x1=\"" << fixed(x, 1) << "\" y1=\"" << kTop - 4 << "\" x2=\""
        << fixed(x, 1) << "\" y2=\"" << height - 10 << "\" stroke-dasharray=\"2,3\"/>"
        << "<text x=\"" << fixed(x, 1) << "\" y=\"" << kTop - 8 << "\" text-anchor=\""
        << (i == 4 ? "end" : "middle") << "\">"
        << ms3(static_cast<double>(span_ns) * i / 4.0 / 1e6) << " ms</text>\n";
  }
  for (const auto& [rank, label] : labels)
    svg << "<text x=\"4\" y=\"" << row_y[rank] + 11 << "\">" << escape(label) << "</text>\n";
  for (const Bar& b : bars) {
    const int top = row_y[b.rank] + (b.lane == 0 ? 0 : kDispatchLane + (b.lane - 1) * kCoreLane);
    const int h = b.lane == 0 ? kDispatchLane - 2 : kCoreLane - 1;
    const double x = kLeft + static_cast<double>(b.start) * scale;
    const double w = std::max(static_cast<double>(b.end - b.start) * scale, 0.5);
    svg << "<rect class=\"" << b.cls << "\" x=\"" << fixed(x, 2) << "\" y=\"" << top
        << "\" width=\"" << fixed(w, 2) << "\" height=\"" << h << "\"";
    if (!b.colour.empty()) svg << " fill=\"" << b.colour << "\"";
    svg << "><title>" << escape(b.title) << "</title></rect>\n";
  }
  const auto lane_middle = [&](int rank, int lane) {
    return row_y[rank] + kDispatchLane + (lane - 1) * kCoreLane + kCoreLane / 2;
  };
  for (const Link& l : links)
    svg << "<line class=\"comm\" x1=\"" << fixed(kLeft + static_cast<double>(l.from_t) * scale, 2)
        << "\" y1=\"" << lane_middle(l.from_rank, l.from_lane) << "\" x2=\""
        << fixed(kLeft + static_cast<double>(l.to_t) * scale, 2) << "\" y2=\""
        << lane_middle(l.to_rank, l.to_lane) << "\"><title>" << escape(l.title)
        << "</title></line>\n";
  svg << "</svg>\n";
  return svg.str();
}

// A count of report/run.json, or a dash where the run has none (an L2 run ships nothing).
std::string count_cell(const Json& rank, const char* key) {
  return rank.contains(key) ? std::to_string(rank[key].get<uint64_t>()) : "&mdash;";
}

// The longest waits of the run and who released each (docs/dfx.md "The run report").
std::string top_waits_html(const RunTimeline& timeline,
                           const std::map<CommOpRef, CommOpRef>& releases) {
  struct Entry {
    size_t dispatch, op;
  };
  std::vector<Entry> waits;
  for (size_t d = 0; d < timeline.dispatches.size(); ++d)
    for (size_t i = 0; i < timeline.dispatches[d].comm_ops.size(); ++i)
      if (timeline.dispatches[d].comm_ops[i].is_wait()) waits.push_back({d, i});
  if (waits.empty()) return "";
  const auto blocked = [&](const Entry& e) {
    const TimelineCommOp& op = timeline.dispatches[e.dispatch].comm_ops[e.op];
    return op.end_ns - op.start_ns;
  };
  std::stable_sort(waits.begin(), waits.end(),
                   [&](const Entry& a, const Entry& b) { return blocked(a) > blocked(b); });
  constexpr size_t kShown = 10;
  std::ostringstream html;
  html << "<h2>Top waits</h2>\n<p>The " << std::min(kShown, waits.size()) << " longest of "
       << waits.size() << " waits and barriers, and the notify that released each.</p>\n"
       << "<table id=\"waits\">\n<tr><th>rank</th><th>dispatch</th><th class=\"l\">wait</th>"
          "<th>task</th><th>blocked (ms)</th><th class=\"l\">released by</th></tr>\n";
  for (size_t i = 0; i < std::min(kShown, waits.size()); ++i) {
    const TimelineDispatch& d = timeline.dispatches[waits[i].dispatch];
    const TimelineCommOp& op = d.comm_ops[waits[i].op];
    std::string by = op.kind == "barrier" ? "every rank" : "&mdash;";
    if (auto it = releases.find({waits[i].dispatch, waits[i].op}); it != releases.end()) {
      const TimelineDispatch& nd = timeline.dispatches[it->second.first];
      const TimelineCommOp& n = timeline.comm_op(it->second);
      by = "rank " + std::to_string(nd.rank) + ", d" + std::to_string(nd.index) + " task " +
           std::to_string(n.task_id) + ": " + escape(n.label());
    }
    html << "<tr><td>" << d.rank << "</td><td>d" << d.index << "</td><td class=\"l\">"
         << escape(op.label()) << (op.ok ? "" : " (failed)") << "</td><td>" << op.task_id
         << "</td><td>" << ms3(static_cast<double>(blocked(waits[i])) / 1e6)
         << "</td><td class=\"l\">" << by << "</td></tr>\n";
  }
  html << "</table>\n";
  return html.str();
}

// The chain that bounded the run's wall time (coordinator/critical_path.h).
std::string critical_path_html(const RunTimeline& timeline,
                               const std::map<CommOpRef, CommOpRef>& releases) {
  const std::vector<CriticalStep> path = critical_path(timeline, releases);
  if (path.empty()) return "";
  const int64_t origin = timeline.origin_ns();
  const int64_t total = path.back().end_ns - path.front().start_ns;
  // Where the time went, by kind of step.
  std::map<CriticalStep::Kind, int64_t> by_kind;
  for (const CriticalStep& s : path) by_kind[s.kind] += s.ns();
  const auto share = [&](int64_t ns) {
    return total > 0 ? fixed(100.0 * static_cast<double>(ns) / static_cast<double>(total), 1)
                     : std::string("0.0");
  };
  std::ostringstream html;
  html << "<h2>Critical path</h2>\n<p id=\"critical-summary\">From the end of the dispatch "
          "that finished last, back through the task running at each moment and, where it "
          "waited, across to the rank whose notify released it: "
       << ms3(static_cast<double>(total) / 1e6) << " ms, of which tasks "
       << share(by_kind[CriticalStep::Kind::kTask]) << "%, between a peer's notify and the wait's return "
       << share(by_kind[CriticalStep::Kind::kWaitRelease]) << "%, no task running "
       << share(by_kind[CriticalStep::Kind::kIdle]) << "%, between dispatches "
       << share(by_kind[CriticalStep::Kind::kBetweenDispatches]) << "%.</p>\n"
       << "<table id=\"critical\">\n<tr><th>from (ms)</th><th>rank</th><th>dispatch</th>"
          "<th class=\"l\">step</th><th>ms</th><th>share</th></tr>\n";
  for (const CriticalStep& s : path)
    html << "<tr><td>" << ms3(static_cast<double>(s.start_ns - origin) / 1e6) << "</td><td>"
         << s.rank << "</td><td>d" << s.dispatch << "</td><td class=\"l\">" << escape(s.what)
         << "</td><td>" << ms3(static_cast<double>(s.ns()) / 1e6) << "</td><td>" << share(s.ns())
         << "%</td></tr>\n";
  html << "</table>\n";
  return html.str();
}

}  // namespace

std::string run_report_html(const Json& report, const RunTimeline* timeline) {
  const std::string program = report.value("program", std::string("?"));
  const std::string result = report.value("result", std::string("?"));
  const Json ranks = report.value("ranks", Json::array());

  // Per-dispatch records of the timeline, by (rank, k).
  std::map<std::pair<int, int64_t>, const TimelineDispatch*> records;
  // Which notify released each wait: drawn, and read by the critical path and top waits.
  const std::map<CommOpRef, CommOpRef> releases =
      timeline ? timeline->comm_releases() : std::map<CommOpRef, CommOpRef>{};
  if (timeline)
    for (const TimelineDispatch& d : timeline->dispatches)
      if (d.level > 0) records[{d.rank, d.index}] = &d;

  // The picture: the timeline's coordinator clock when there are records, else
  // the dispatches' CLOCK_REALTIME spans from the report.
  std::vector<Bar> bars;
  std::vector<Link> links;
  std::map<int, std::string> labels;
  std::map<int, int> lanes;
  int64_t span_ns = 0;
  if (!records.empty()) {
    const int64_t origin = timeline->origin_ns();
    std::map<int, std::map<int64_t, int>> core_lane;
    for (const auto& [key, d] : records) {
      labels[d->rank] = "rank " + std::to_string(d->rank) + " (" + d->host + ")";
      for (const auto& [id, type] : d->cores) core_lane[d->rank].emplace(id, 0);
    }
    for (auto& [rank, cores] : core_lane) {
      int lane = 1;
      for (auto& [id, l] : cores) l = lane++;
      lanes[rank] = static_cast<int>(cores.size());
    }
    for (const auto& [key, d] : records) {
      lanes.emplace(d->rank, 0);
      bars.push_back({d->rank, 0, d->begin_ns - origin, d->end_ns - origin, "dispatch", "",
                      d->label() + ": " + ms3(static_cast<double>(d->end_ns - d->begin_ns) / 1e6) +
                          " ms, " + std::to_string(d->num_tasks) + " task(s)"});
      span_ns = std::max(span_ns, d->end_ns - origin);
      for (const TimelineTask& t : d->tasks) {
        if (t.core_id < 0) continue;
        bars.push_back({d->rank, core_lane[d->rank][t.core_id], t.start_ns - origin,
                        t.end_ns - origin, "task", kernel_colour(t.kernel),
                        t.kernel + " (task " + std::to_string(t.task_id) + ", func " +
                            std::to_string(t.func_id) + ", " + t.core_type + " core " +
                            std::to_string(t.core_id) + "): " +
                            ms3(static_cast<double>(t.end_ns - t.start_ns) / 1e6) + " ms"});
        span_ns = std::max(span_ns, t.end_ns - origin);
      }
      // Time blocked in wait / barrier, drawn over the task that waited.
      for (const TimelineCommOp& op : d->comm_ops)
        if (op.is_wait() && core_lane[d->rank].count(op.core_id))
          bars.push_back({d->rank, core_lane[d->rank][op.core_id], op.start_ns - origin,
                          op.end_ns - origin, "wait", "",
                          op.label() + " (task " + std::to_string(op.task_id) + "): blocked " +
                              ms3(static_cast<double>(op.end_ns - op.start_ns) / 1e6) + " ms"});
    }
    for (const auto& [wait_ref, notify_ref] : releases) {
      const TimelineDispatch& nd = timeline->dispatches[notify_ref.first];
      const TimelineDispatch& wd = timeline->dispatches[wait_ref.first];
      const TimelineCommOp& n = timeline->comm_op(notify_ref);
      const TimelineCommOp& w = timeline->comm_op(wait_ref);
      if (!core_lane[nd.rank].count(n.core_id) || !core_lane[wd.rank].count(w.core_id)) continue;
      links.push_back({nd.rank, core_lane[nd.rank][n.core_id], n.start_ns - origin, wd.rank,
                       core_lane[wd.rank][w.core_id], w.end_ns - origin,
                       "rank " + std::to_string(nd.rank) + " " + n.label() + " released rank " +
                           std::to_string(wd.rank) + "'s " + w.label()});
    }
  } else {
    int64_t origin = std::numeric_limits<int64_t>::max();
    for (const Json& r : ranks)
      for (const Json& d : r.value("dispatches", Json::array()))
        if (d.contains("start_unix_ns")) origin = std::min(origin, d["start_unix_ns"].get<int64_t>());
    for (const Json& r : ranks) {
      const int rank = r.value("rank", 0);
      labels[rank] = "rank " + std::to_string(rank) + " (" + r.value("host", std::string("?")) + ")";
      lanes[rank] = 0;
      for (const Json& d : r.value("dispatches", Json::array())) {
        if (!d.contains("start_unix_ns")) continue;
        const int64_t start = d["start_unix_ns"].get<int64_t>() - origin;
        const int64_t end = d["end_unix_ns"].get<int64_t>() - origin;
        bars.push_back({rank, 0, start, end, "dispatch", "",
                        "d" + std::to_string(d.value("dispatch", 0)) + " " +
                            d.value("program", std::string("?")) + ": " + ms3(d.value("ms", 0.0)) +
                            " ms"});
        span_ns = std::max(span_ns, end);
      }
    }
  }

  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>"
       << escape(program) << ": " << escape(result) << "</title>\n<style>" << kStyle
       << "</style>\n</head>\n<body>\n";
  html << "<h1>" << escape(program) << " <span id=\"outcome\" class=\"outcome " << escape(result)
       << "\">" << escape(result) << "</span></h1>\n";
  html << "<p id=\"summary\">" << report.value("world", 1) << " rank(s) on "
       << escape(report.value("platform", std::string("?"))) << "; run "
       << ms3(report.value("run_ms", 0.0)) << " ms";
  if (report.contains("launch_ms")) html << ", agents up in " << ms3(report["launch_ms"].get<double>()) << " ms";
  if (report.contains("prepare_ms"))
    html << ", prepared in " << ms3(report["prepare_ms"].get<double>()) << " ms";
  if (report.contains("bytes_shipped"))
    html << ", " << report["bytes_shipped"].get<uint64_t>() << " bytes shipped";
  html << "</p>\n";
  if (report.contains("diagnosis")) {
    html << stall_html(report["diagnosis"]);
  } else if (report.contains("error")) {
    html << "<pre id=\"error\">" << escape(report["error"].get<std::string>()) << "</pre>\n";
  }

  html << "<h2>Timeline</h2>\n";
  if (bars.empty()) {
    html << "<p>No dispatch completed: nothing to draw.</p>\n";
  } else {
    html << "<p>" << (records.empty()
                          ? "Dispatches on each host's CLOCK_REALTIME (run with --swimlane for "
                            "task bars on one clock)."
                          : "Dispatches (upper bar) and tasks per core on the coordinator's "
                            "clock; time blocked in wait or barrier in red, a red line from "
                            "each notify to the wait it released; hover for the numbers.")
         << "</p>\n";
    html << svg_picture(bars, links, labels, lanes, span_ns);
  }

  auto kernel_cell = [](const TimelineDispatch* d) {
    return d ? ms3(static_cast<double>(d->kernel_ns()) / 1e6) : std::string("&mdash;");
  };
  auto tasks_cell = [](const TimelineDispatch* d) {
    return d ? std::to_string(d->num_tasks) : std::string("&mdash;");
  };
  auto wait_cell = [](const TimelineDispatch* d) {
    return d ? ms3(static_cast<double>(d->wait_ns()) / 1e6) : std::string("&mdash;");
  };

  html << "<h2>Ranks</h2>\n<table id=\"ranks\">\n<tr><th>rank</th><th class=\"l\">host</th>"
          "<th>dispatches</th><th>wall (ms)</th><th>kernel time (ms)</th>"
          "<th>waiting (ms)</th><th>tasks</th>"
          "<th>bytes shipped</th><th>cache hits</th><th>compiles</th></tr>\n";
  for (const Json& r : ranks) {
    const int rank = r.value("rank", 0);
    const Json dispatches = r.value("dispatches", Json::array());
    double wall = 0;
    int64_t kernel_ns = 0, wait_ns = 0, tasks = 0;
    bool all_records = !dispatches.empty();
    for (const Json& d : dispatches) {
      wall += d.value("ms", 0.0);
      auto it = records.find({rank, d.value("dispatch", int64_t{0})});
      if (it == records.end()) {
        all_records = false;
        continue;
      }
      kernel_ns += it->second->kernel_ns();
      wait_ns += it->second->wait_ns();
      tasks += it->second->num_tasks;
    }
    html << "<tr id=\"rank-" << rank << "\"><td>" << rank << "</td><td class=\"l\">"
         << escape(r.value("host", std::string("?"))) << "</td><td>" << dispatches.size()
         << "</td><td>" << ms3(wall) << "</td><td>"
         << (all_records ? ms3(static_cast<double>(kernel_ns) / 1e6) : "&mdash;") << "</td><td>"
         << (all_records ? ms3(static_cast<double>(wait_ns) / 1e6) : "&mdash;") << "</td><td>"
         << (all_records ? std::to_string(tasks) : "&mdash;") << "</td><td>"
         << count_cell(r, "bytes_shipped") << "</td><td>" << count_cell(r, "cache_hits")
         << "</td><td>" << count_cell(r, "compiles") << "</td></tr>\n";
  }
  html << "</table>\n";

  html << "<h2>Dispatches</h2>\n<table id=\"dispatches\">\n<tr><th>rank</th><th>dispatch</th>"
          "<th class=\"l\">program</th><th>wall (ms)</th><th class=\"l\">phases (ms)</th>"
          "<th>kernel time (ms)</th><th>waiting (ms)</th><th>tasks</th></tr>\n";
  for (const Json& r : ranks) {
    const int rank = r.value("rank", 0);
    for (const Json& d : r.value("dispatches", Json::array())) {
      const int64_t k = d.value("dispatch", int64_t{0});
      auto it = records.find({rank, k});
      const TimelineDispatch* rec = it == records.end() ? nullptr : it->second;
      std::string phases;
      const Json timings = d.value("timings", Json::object());
      for (auto it = timings.begin(); it != timings.end(); ++it)
        if (it.value().is_number())
          phases += (phases.empty() ? "" : ", ") + it.key() + " " + ms3(it.value().get<double>());
      html << "<tr id=\"rank-" << rank << "-d" << k << "\"><td>" << rank << "</td><td>d" << k
           << "</td><td class=\"l\">" << escape(d.value("program", std::string("?")))
           << "</td><td>" << ms3(d.value("ms", 0.0)) << "</td><td class=\"l\">" << escape(phases)
           << "</td><td>" << kernel_cell(rec) << "</td><td>" << wait_cell(rec) << "</td><td>"
           << tasks_cell(rec) << "</td></tr>\n";
    }
  }
  html << "</table>\n";
  if (timeline)
    html << critical_path_html(*timeline, releases) << top_waits_html(*timeline, releases);
  if (!records.empty())
    html << "<p>The full timeline, with dependency arrows and counters: "
            "<code>dfx_outputs/timeline.json</code> (open it in Perfetto or chrome://tracing; "
            "docs/dfx.md).</p>\n";
  html << "</body>\n</html>\n";
  return html.str();
}

void write_run_html(const fs::path& build_dir, const Json& report, bool dfx_current) {
  try {
    std::optional<RunTimeline> timeline;
    const fs::path dfx_root = build_dir / kDfxOutputsDir;
    if (dfx_current && fs::is_directory(dfx_root)) {
      try {
        timeline = read_run_timeline(dfx_root);
      } catch (const std::exception& e) {
        log::debug("run report without DFX records: {}", e.what());
      }
    }
    write_file_atomic(build_dir / kReportDir / "run.html",
                      run_report_html(report, timeline ? &*timeline : nullptr));
  } catch (const std::exception& e) {
    log::warn("could not write the HTML run report: {}", e.what());
  }
}

}  // namespace pypto::coord
