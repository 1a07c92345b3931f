#include "compiler/codegen/codegen_windows.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>

namespace pypto::compiler {

namespace {

using Binding = std::map<std::string, std::string>;  // window parameter -> window name

bool declares(const std::vector<StmtPtr>& block, const std::string& name) {
  bool found = false;
  for_each_declared_name(block, [&](const std::string& n, Span) { found = found || n == name; });
  return found;
}

std::string key_of(const Function& f, const Binding& binding) {
  std::string key = f.name;
  for (const auto& [param, window] : binding) key += "|" + param + "=" + window;
  return key;
}

class Specializer {
 public:
  Specializer(FunctionTable& table, std::deque<Function>& storage, const SourceManager* sources)
      : table_(table), storage_(storage), sources_(sources) {}

  // `f` (a chip function or kernel) with its window parameters bound as given.
  const Function* specialize(const Function& f, const Binding& binding) {
    const std::string key = key_of(f, binding);
    auto done = done_.find(key);
    if (done != done_.end()) return done->second;
    const Function* result =
        f.kind == FuncKind::kKernel ? rename_kernel(f, binding) : rewrite_chip(f, binding);
    done_[key] = result;
    return result;
  }

 private:
  std::string fresh_name(const std::string& base) {
    std::string name;
    for (int n = 1; name.empty() || table_.find(name); ++n) name = base + "_w" + std::to_string(n);
    return name;
  }

  const Function* store(Function f) {
    f.name = fresh_name(f.name);
    storage_.push_back(std::move(f));
    table_.add(&storage_.back());
    return &storage_.back();
  }

  // The kernel with each window parameter renamed to the window bound to it.
  const Function* rename_kernel(const Function& kernel, const Binding& binding) {
    bool identity = true;
    for (const auto& [param, window] : binding) identity = identity && param == window;
    if (identity) return &kernel;
    Function copy = clone(kernel);
    std::set<std::string> taken;
    for (const auto& [param, window] : binding) taken.insert(window);
    if (taken.size() != binding.size())
      codegen_error(sources_, kernel.name_span,
                    "kernel '" + kernel.name +
                        "' is called with one window for two of its window parameters; kernels "
                        "find windows by name, so each parameter needs a window of its own");
    // All renames at once: parameters may trade names (x -> y, y -> x).
    Binding renames;
    for (const Param& p : copy.params) {
      auto bound = binding.find(p.name);
      if (p.kind != ParamKind::kWindow || bound == binding.end() || bound->second == p.name)
        continue;
      const std::string& to = bound->second;
      bool clash = declares(copy.body, to);
      for (const Param& q : kernel.params) clash = clash || (q.name == to && !binding.count(q.name));
      if (clash)
        codegen_error(sources_, p.span,
                      "kernel '" + kernel.name + "' finds its window parameter '" + p.name +
                          "' by name at run time, and this call binds it to window '" + to +
                          "', but '" + to + "' already names something else in '" + kernel.name +
                          "'; rename that");
      renames[p.name] = to;
    }
    for (Param& p : copy.params)
      if (renames.count(p.name)) p.name = renames[p.name];
    for_each_expr(copy.body, [&](Expr& e) {
      auto to = e.kind == ExprKind::kName ? renames.find(e.name) : renames.end();
      if (to != renames.end()) e.name = to->second;
    });
    return store(std::move(copy));
  }

  // A window-valued expression of a chip body: a parameter or a let of one.
  static const std::string* window_of(const Expr& e, const Binding& env) {
    if (e.kind != ExprKind::kName) return nullptr;
    auto it = env.find(e.name);
    return it == env.end() ? nullptr : &it->second;
  }

  // Rewrites the calls of `block` to the specialized callees; true when any changed.
  bool rewrite_block(std::vector<StmtPtr>& block, Binding env) {
    bool changed = false;
    for (StmtPtr& s : block) {
      if (!s) continue;
      if (s->kind == StmtKind::kLet && s->value) {
        if (const std::string* w = window_of(*s->value, env)) env[s->name] = *w;
      }
      if (s->kind == StmtKind::kCall && s->value && s->value->kind == ExprKind::kCall) {
        Expr& call = *s->value;
        const Function* callee = table_.find(call.name);
        if (callee && (callee->kind == FuncKind::kKernel || callee->kind == FuncKind::kChip)) {
          Binding binding;
          for (size_t i = 0; i < callee->params.size() && i < call.args.size(); ++i)
            if (callee->params[i].kind == ParamKind::kWindow && call.args[i])
              if (const std::string* w = window_of(*call.args[i], env))
                binding[callee->params[i].name] = *w;
          const Function* target = specialize(*callee, binding);
          if (target != callee) {
            call.name = target->name;
            changed = true;
          }
        }
      }
      changed = rewrite_block(s->body, env) || changed;
      changed = rewrite_block(s->else_body, env) || changed;
    }
    return changed;
  }

  const Function* rewrite_chip(const Function& chip, const Binding& binding) {
    Function copy = clone(chip);
    if (!rewrite_block(copy.body, binding)) return &chip;
    return store(std::move(copy));
  }

  FunctionTable& table_;
  std::deque<Function>& storage_;
  const SourceManager* sources_;
  std::map<std::string, const Function*> done_;
};

}  // namespace

void specialize_windows(HostPlan& plan, FunctionTable& table, std::deque<Function>& storage,
                        const SourceManager* sources) {
  Specializer specializer(table, storage, sources);
  plan.chips.clear();
  for (size_t i = 0; i < plan.dispatches.size(); ++i) {
    PlannedDispatch& d = plan.dispatches[i];
    d.chip = specializer.specialize(*d.chip, d.windows);
    plan.orch.dispatches[i].program = d.chip->name;
    if (std::find(plan.chips.begin(), plan.chips.end(), d.chip) == plan.chips.end())
      plan.chips.push_back(d.chip);
  }
}

}  // namespace pypto::compiler
