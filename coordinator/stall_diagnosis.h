// Why a distributed dispatch failed or hung, from every rank's state
// (RANK_STATE, gathered by the coordinator once something went wrong): for each
// rank what it waits for and from whom, what that peer is doing, and the
// likely culprit at the end of the chain — the rank everyone waits on that
// is not itself waiting (docs/dfx.md "Why a run hangs").
//
// Who a wait waits for: a flag window of the library's and the compiler's
// layout, [WORLD, ...], has one row per notifying rank, so a wait on row p
// waits for rank p. Other windows name no peer; then the diagnosis says so.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "artifact/host_orch.h"
#include "common/json_reader.h"
#include "common/wire/protocol.h"
#include "pypto/error.h"

namespace pypto::coord {

struct RankStateReport {
  std::optional<wire::RankState> state;  // nullopt: it did not answer
  bool gone = false;                     // its process is known to have ended
};

struct StallDiagnosis {
  std::string summary;               // one line: what stalled and the likely culprit
  std::vector<std::string> details;  // one line per rank
  std::vector<int> culprits;
  Json json;                         // report/run.json "diagnosis"
  // summary, then the details indented under it.
  std::string text() const;
};

// nullopt when no rank was running, waiting or failed in a dispatch (nothing to explain).
std::optional<StallDiagnosis> diagnose_stall(const std::vector<RankStateReport>& ranks,
                                             const std::vector<WindowInfo>& windows);

// The error a run fails with once its failure has been diagnosed: the
// diagnosis as its message (exit 1, as the failure it explains), and as JSON.
class StalledDispatchError : public KernelRuntimeError {
 public:
  explicit StalledDispatchError(const StallDiagnosis& diagnosis)
      : KernelRuntimeError(diagnosis.text()), diagnosis_(diagnosis.json) {}
  const Json& diagnosis() const { return diagnosis_; }

 private:
  Json diagnosis_;
};

}  // namespace pypto::coord
