// What Perfetto and chrome://tracing need of a Chrome trace-event file
// (docs/dfx.md "The run's timeline"), checked without them: the problems found
// in `trace`, empty when there is none. One line per problem, naming the event.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace pypto::e2e {

inline std::vector<std::string> trace_format_problems(const nlohmann::json& trace) {
  std::vector<std::string> problems;
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array())
    return {"no traceEvents array"};
  static const std::set<std::string> kPhases = {"X", "M", "s", "f", "C", "i", "B", "E"};
  struct Flow {
    int starts = 0, ends = 0;
    int start_pid = -1, end_pid = -1;
    std::string name, cat;
  };
  std::map<int64_t, Flow> flows;
  size_t index = 0;
  for (const nlohmann::json& e : trace["traceEvents"]) {
    const std::string at = "event " + std::to_string(index++) + " " + e.dump().substr(0, 160);
    if (!e.is_object() || !e.contains("ph") || !e["ph"].is_string() ||
        !kPhases.count(e["ph"].get<std::string>())) {
      problems.push_back(at + ": no known ph");
      continue;
    }
    const std::string ph = e["ph"];
    if (!e.contains("pid") || !e["pid"].is_number_integer()) problems.push_back(at + ": no pid");
    if (!e.contains("name") || !e["name"].is_string()) problems.push_back(at + ": no name");
    if (ph == "M") continue;
    if (!e.contains("ts") || !e["ts"].is_number() || e["ts"].get<double>() < 0)
      problems.push_back(at + ": no ts >= 0");
    if (ph != "C" && (!e.contains("tid") || !e["tid"].is_number_integer()))
      problems.push_back(at + ": no tid");
    if (ph == "X" && (!e.contains("dur") || !e["dur"].is_number() || e["dur"].get<double>() < 0))
      problems.push_back(at + ": a complete event without dur >= 0");
    if (ph == "C") {
      if (!e.contains("args") || !e["args"].is_object() || e["args"].empty())
        problems.push_back(at + ": a counter without args");
      else
        for (const auto& [key, value] : e["args"].items())
          if (!value.is_number()) problems.push_back(at + ": counter " + key + " is not a number");
    }
    if (ph == "s" || ph == "f") {
      if (!e.contains("id") || !e["id"].is_number_integer()) {
        problems.push_back(at + ": a flow without an id");
        continue;
      }
      Flow& flow = flows[e["id"].get<int64_t>()];
      const std::string name = e.value("name", ""), cat = e.value("cat", "");
      if ((flow.starts + flow.ends) && (flow.name != name || flow.cat != cat))
        problems.push_back(at + ": its flow's ends differ in name or cat");
      flow.name = name;
      flow.cat = cat;
      if (ph == "s") {
        ++flow.starts;
        flow.start_pid = e["pid"].get<int>();
      } else {
        ++flow.ends;
        flow.end_pid = e["pid"].get<int>();
        if (e.value("bp", "") != "e") problems.push_back(at + ": a flow end without bp e");
      }
    }
  }
  for (const auto& [id, flow] : flows) {
    if (flow.starts != 1 || flow.ends != 1)
      problems.push_back("flow " + std::to_string(id) + " has " + std::to_string(flow.starts) +
                         " start(s) and " + std::to_string(flow.ends) + " end(s)");
    // Communication is between ranks.
    if ((flow.cat == "comm" || flow.cat == "comm_data") && flow.start_pid == flow.end_pid)
      problems.push_back("flow " + std::to_string(id) + " (" + flow.name +
                         ") starts and ends on rank " + std::to_string(flow.start_pid));
  }
  return problems;
}

}  // namespace pypto::e2e
