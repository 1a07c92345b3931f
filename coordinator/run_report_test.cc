#include "coordinator/run_report.h"

#include <gtest/gtest.h>

namespace pypto::coord {
namespace {

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// The <tr id="..."> row of the page, up to its </tr>.
std::string row(const std::string& html, const std::string& id) {
  const size_t at = html.find("<tr id=\"" + id + "\">");
  if (at == std::string::npos) return "";
  return html.substr(at, html.find("</tr>", at) - at);
}

Json two_rank_report() {
  Json report = {{"program", "allreduce"}, {"result", "PASS"},   {"world", 2},
                 {"platform", "a2a3sim"},  {"run_ms", 12.5},     {"launch_ms", 100.0},
                 {"prepare_ms", 20.0},     {"bytes_shipped", 4096}};
  for (int rank = 0; rank < 2; ++rank)
    report["ranks"].push_back(
        {{"rank", rank},
         {"host", "node-" + std::to_string(rank)},
         {"bytes_shipped", 1000 + rank},
         {"cache_hits", 3 + rank},
         {"compiles", 2 - rank},
         {"dispatches",
          Json::array({{{"dispatch", 0}, {"program", "chip_orch"}, {"ms", 1.5 + rank},
            {"start_unix_ns", 1'000'000 + rank * 500'000}, {"end_unix_ns", 2'500'000 + rank * 1'000'000},
            {"timings", {{"assemble_ms", 0.25}, {"run_ms", 1.0}}}}})}});
  return report;
}

RunTimeline two_rank_timeline() {
  RunTimeline run;
  for (int rank = 0; rank < 2; ++rank) {
    TimelineDispatch d;
    d.rank = rank;
    d.program = "chip_orch";
    d.host = "node-" + std::to_string(rank);
    d.level = 1;
    d.begin_ns = 10'000;
    d.end_ns = 60'000;
    d.num_tasks = 3;
    d.cores = {{0, "aic"}, {1, "aiv"}};
    for (int t = 0; t < 3; ++t) {
      TimelineTask task;
      task.task_id = t;
      task.kernel = t == 1 ? "matmul<f32>" : "vadd";
      task.core_id = t % 2;
      task.core_type = t % 2 ? "aiv" : "aic";
      task.start_ns = 10'000 + t * 10'000;
      task.end_ns = task.start_ns + 4'000 * (rank + 1);
      d.tasks.push_back(task);
    }
    run.dispatches.push_back(d);
  }
  return run;
}

TEST(RunReportTest, IsSelfContained) {
  const RunTimeline timeline = two_rank_timeline();
  const std::string html = run_report_html(two_rank_report(), &timeline);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(html, "<script"), 0u);
  EXPECT_EQ(count(html, "http:"), 0u);
  EXPECT_EQ(count(html, "https:"), 0u);
  EXPECT_EQ(count(html, "<link"), 0u);
  EXPECT_EQ(count(html, "<svg"), 1u);
  EXPECT_EQ(count(html, "</svg>"), 1u);
}

TEST(RunReportTest, DrawsADispatchBarPerDispatchAndATaskBarPerTask) {
  const RunTimeline timeline = two_rank_timeline();
  const std::string html = run_report_html(two_rank_report(), &timeline);
  EXPECT_EQ(count(html, "<rect class=\"dispatch\""), 2u);
  EXPECT_EQ(count(html, "<rect class=\"task\""), 6u);
  // Kernel names are escaped, in the bar's tooltip.
  EXPECT_NE(html.find("<title>matmul&lt;f32&gt; (task 1"), std::string::npos);
  EXPECT_NE(html.find("rank 1 (node-1)"), std::string::npos);
  EXPECT_NE(html.find("class=\"outcome PASS\""), std::string::npos);
}

TEST(RunReportTest, TablesCarryTheRecordsNumbers) {
  const RunTimeline timeline = two_rank_timeline();
  const std::string html = run_report_html(two_rank_report(), &timeline);
  // Rank 1: 1 dispatch, wall 2.5 ms, kernel 3 x 8 us, 3 tasks, 1001 bytes, 4 hits, 1 compile.
  EXPECT_EQ(row(html, "rank-1"),
            "<tr id=\"rank-1\"><td>1</td><td class=\"l\">node-1</td><td>1</td><td>2.500</td>"
            "<td>0.024</td><td>0.000</td><td>3</td><td>1001</td><td>4</td><td>1</td>");
  const std::string d = row(html, "rank-0-d0");
  EXPECT_NE(d.find("<td>1.500</td>"), std::string::npos) << d;
  EXPECT_NE(d.find("assemble_ms 0.250, run_ms 1.000"), std::string::npos) << d;
  EXPECT_NE(d.find("<td>0.012</td><td>0.000</td><td>3</td>"), std::string::npos) << d;
}

TEST(RunReportTest, WaitsAreRedBarsLinkedToTheNotifyThatReleasedThem) {
  RunTimeline timeline = two_rank_timeline();
  auto op = [](const char* kind, int64_t peer, int64_t start, int64_t end) {
    TimelineCommOp o;
    o.kind = kind;
    o.window = "signal";
    o.window_id = 1;
    o.cell = 1;
    o.offset = 4;
    o.peer = peer;
    o.value = 1;
    o.mode = std::string(kind) == "wait" ? "ge" : "add";
    o.task_id = 0;
    o.core_id = 0;
    o.start_ns = start;
    o.end_ns = end;
    return o;
  };
  timeline.dispatches[0].comm_ops = {op("wait", -1, 10'500, 13'500)};   // rank 0 blocked 3 us
  timeline.dispatches[1].comm_ops = {op("notify", 0, 13'000, 13'100)};  // rank 1 releases it
  const std::string html = run_report_html(two_rank_report(), &timeline);
  EXPECT_NE(html.find("<rect class=\"wait\""), std::string::npos);
  EXPECT_NE(html.find("<line class=\"comm\""), std::string::npos);
  EXPECT_NE(html.find("rank 1 notify 'signal'[1] of rank 0 add 1 released rank 0's wait "
                      "'signal'[1] ge 1"),
            std::string::npos);
  // The rank's waiting time, and the wait in the top-waits table with its releaser.
  EXPECT_NE(row(html, "rank-0").find("<td>0.003</td><td>3</td>"), std::string::npos)
      << row(html, "rank-0");
  // The critical path crosses from rank 0's wait to rank 1's notify.
  const size_t critical = html.find("<table id=\"critical\">");
  ASSERT_NE(critical, std::string::npos);
  EXPECT_NE(html.find("wait 'signal'[1] ge 1 released by rank 1's notify", critical),
            std::string::npos);
  const size_t table = html.find("<table id=\"waits\">");
  ASSERT_NE(table, std::string::npos);
  EXPECT_NE(html.find("<td>0.003</td><td class=\"l\">rank 1, d0 task 0: notify 'signal'[1] of "
                      "rank 0 add 1</td>",
                      table),
            std::string::npos)
      << html.substr(table);
}

TEST(RunReportTest, AStalledRunShowsItsDiagnosisWithTheCulpritMarked) {
  Json report = {{"program", "allreduce"}, {"result", "FAIL"}, {"world", 2},
                 {"error", "dispatch d0 stalled: rank 1 is the likely culprit"}};
  report["diagnosis"] = {
      {"summary", "dispatch d0 of program 'c' stalled: rank 1 is the likely culprit: it <finished>"},
      {"culprits", {1}},
      {"ranks",
       {{{"rank", 0}, {"state", "waiting"}, {"waits_for", {1}},
         {"detail", "rank 0: waits on 'signal'[1, 0] ge 1 (now 0) for rank 1"}},
        {{"rank", 1}, {"state", "finished"}, {"waits_for", Json::array()},
         {"detail", "rank 1: finished dispatch d0 (program 'c')"}}}}};
  const std::string html = run_report_html(report, nullptr);
  EXPECT_NE(html.find("<h2>Why it stalled</h2>"), std::string::npos);
  EXPECT_NE(html.find("it &lt;finished&gt;"), std::string::npos);  // escaped
  EXPECT_NE(html.find("<tr><td>0</td><td class=\"l\">waiting</td><td>1</td><td class=\"l\">waits "
                      "on 'signal'[1, 0] ge 1 (now 0) for rank 1</td></tr>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<tr class=\"culprit\"><td>1</td><td class=\"l\">finished</td>"),
            std::string::npos)
      << html;
  EXPECT_EQ(html.find("<pre id=\"error\">"), std::string::npos);  // the table says it
}

TEST(RunReportTest, WithoutRecordsDrawsTheDispatchesAndLeavesKernelTimeOpen) {
  Json report = two_rank_report();
  report["result"] = "FAIL";
  report["error"] = "rank 1: kernel 'vadd' <failed>";
  const std::string html = run_report_html(report, nullptr);
  EXPECT_EQ(count(html, "<rect class=\"dispatch\""), 2u);
  EXPECT_EQ(count(html, "<rect class=\"task\""), 0u);
  EXPECT_NE(html.find("<pre id=\"error\">rank 1: kernel 'vadd' &lt;failed&gt;</pre>"),
            std::string::npos);
  EXPECT_NE(row(html, "rank-0").find("<td>&mdash;</td>"), std::string::npos);
}

}  // namespace
}  // namespace pypto::coord
