// The reference interpreter's entry points: binding the entry's arguments,
// running the host plan with one thread per rank, and seeded inputs.
//
//   host function   runs first, alone: allocates the window buffers (one zeroed
//                   copy per rank) and records every `chip(...) on r`;
//   ranks           one thread each, running its dispatches in host order;
//                   ranks run concurrently because kernels synchronize across
//                   ranks (notify/wait) — see interp_world.h;
//   chip functions  kernel calls are tasks, run to completion in program order;
//   kernels         tiles and builtins, interp_eval.cc and interp_tile_ops.cc.
#include "compiler/interp/reference_interpreter.h"

#include <exception>
#include <thread>

#include "compiler/interp/interp_eval.h"
#include "compiler/interp/interp_values.h"
#include "compiler/interp/interp_world.h"
#include "pypto/error.h"

namespace pypto::compiler {

using interp::Dispatch;
using interp::Evaluator;
using interp::ProgramInfo;
using interp::TensorRef;
using interp::Value;
using interp::World;

namespace {

// The entry's parameters bound to the caller's tensors (scalars: one-element tensors).
std::vector<Value> bind_arguments(const ProgramInfo& info, const Function& entry,
                                  const std::vector<Tensor>& args) {
  const std::string where = info.where(entry.name_span);
  if (args.size() != entry.params.size()) {
    throw ProgramError(where + ": '" + entry.name + "' takes " +
                       std::to_string(entry.params.size()) + " arguments, but " +
                       std::to_string(args.size()) + " tensors were given");
  }
  std::vector<Value> values;
  for (size_t i = 0; i < args.size(); ++i) {
    const Param& p = entry.params[i];
    const Tensor& t = args[i];
    const std::string what = "argument " + std::to_string(i + 1) + " of '" + entry.name +
                             "' (parameter '" + p.name + "')";
    switch (p.kind) {
      case ParamKind::kWindow:
        throw ProgramError(where + ": " + what +
                           " is a window; an entry cannot take windows (the host creates them)");
      case ParamKind::kScalar: {
        if (t.numel() != 1) {
          throw ProgramError(where + ": " + what + " is a scalar: pass a one-element tensor, not " +
                             t.describe());
        }
        const auto* p0 = static_cast<const std::byte*>(t.data());
        if (is_float_dtype(t.dtype()))
          values.emplace_back(interp::read_float(p0, t.dtype()));
        else
          values.emplace_back(interp::read_int(p0, t.dtype()));
        break;
      }
      case ParamKind::kTensor:
        if (t.dtype() != p.type.dtype || t.shape() != p.type.shape) {
          throw ProgramError(where + ": " + what + " must be " +
                             shape_string(p.type.dtype, p.type.shape) + ", not " + t.describe());
        }
        values.emplace_back(TensorRef::of(t));
        break;
    }
  }
  return values;
}

// One rank's thread: its dispatches in host order. Any error is recorded in the
// world (the first one wins) and stops the other ranks.
// A dispatch as the rank runs it: every in-place parameter (`x: ... at w`)
// bound to a view of the first bytes of the rank's copy of w, which first
// receives the host box's data (In/InOut) — as a rank agent does. `placed`
// lists (parameter index, host box) for copying results back.
std::vector<Value> place_in_windows(const Dispatch& d, World& world, int64_t rank,
                                    std::vector<std::pair<size_t, TensorRef>>& placed) {
  std::vector<Value> args = d.args;
  const Function& chip = *d.chip;
  for (size_t i = 0; i < chip.params.size() && i < args.size(); ++i) {
    const Param& p = chip.params[i];
    if (p.at.empty()) continue;
    size_t w = 0;
    while (w < chip.params.size() && chip.params[w].name != p.at) ++w;
    const auto& window = world.window(std::get<interp::WindowRef>(args.at(w)));
    TensorRef view = TensorRef::of(window.copies[static_cast<size_t>(rank)]);
    view.dtype = p.type.dtype;
    view.shape = p.type.shape;
    view.strides = row_major_strides(view.shape);
    view.offset = 0;
    view.in_window = true;
    const TensorRef box = std::get<TensorRef>(args[i]);
    const Shape origin(view.shape.size(), 0);
    if (p.dir != Direction::kOut)
      world.access(true, [&] { interp::copy_region(view, origin, box, origin, view.shape); });
    placed.emplace_back(i, box);
    args[i] = view;
  }
  return args;
}

void run_rank(const ProgramInfo& info, World& world, int64_t rank,
              const std::vector<Dispatch>& dispatches) {
  try {
    Evaluator evaluator(info, &world, rank);
    for (const Dispatch& d : dispatches) {
      std::vector<std::pair<size_t, TensorRef>> placed;
      const std::vector<Value> args = place_in_windows(d, world, rank, placed);
      evaluator.run(*d.chip, args);
      for (const auto& [i, box] : placed) {
        if (d.chip->params[i].dir == Direction::kIn) continue;
        const TensorRef& view = std::get<TensorRef>(args[i]);
        const Shape origin(view.shape.size(), 0);
        world.access(false, [&] { interp::copy_region(box, origin, view, origin, view.shape); });
      }
    }
  } catch (const interp::Aborted&) {
    // Another rank failed first; its error is the run's.
  } catch (...) {
    world.fail(std::current_exception());
  }
  world.finish(rank);
}

// splitmix64: a tiny, well-mixed, reproducible generator.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};

// A value exact in `dtype` whose sums and products stay exact in f32 for the
// sizes of tile programs: k/8 for k in -16..16 (floats), -8..8 (signed
// integers), 0..16 (u8), 0 or 1 (bool).
void write_seeded(std::byte* p, DType dtype, uint64_t r) {
  switch (dtype) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
      interp::write_float(p, dtype, static_cast<double>(static_cast<int64_t>(r % 33) - 16) / 8.0);
      return;
    case DType::kU8:
      interp::write_int(p, dtype, static_cast<int64_t>(r % 17));
      return;
    case DType::kBool:
      interp::write_int(p, dtype, static_cast<int64_t>(r & 1));
      return;
    default:
      interp::write_int(p, dtype, static_cast<int64_t>(r % 17) - 8);
      return;
  }
}

}  // namespace

void interpret(const Program& program, const Function& entry, std::vector<Tensor>& args,
               const InterpretOptions& options) {
  ProgramInfo info = interp::describe_program(program, options.world, options.sources);
  info.distributed = entry.kind == FuncKind::kHost;
  if (options.world < 1)
    throw ProgramError("the world size must be at least 1, not " + std::to_string(options.world));
  if (entry.kind == FuncKind::kKernel) {
    throw ProgramError(info.where(entry.name_span) + ": kernel '" + entry.name +
                       "' cannot be an entry; run a chip function (L2) or a host function (L3)");
  }
  const std::vector<Value> values = bind_arguments(info, entry, args);

  // An L2 program runs its chip function once, as rank 0 of a world of one chip.
  World world(info.distributed ? options.world : 1, options.timeout);
  std::vector<std::vector<Dispatch>> plan(static_cast<size_t>(world.ranks()));
  if (info.distributed) {
    Evaluator host(info, &world, -1);
    host.run(entry, values);
    for (const Dispatch& d : host.dispatches()) plan[static_cast<size_t>(d.rank)].push_back(d);
  } else {
    plan[0].push_back(Dispatch{0, &entry, values});
  }

  if (world.ranks() == 1) {
    run_rank(info, world, 0, plan[0]);
  } else {
    std::vector<std::thread> threads;
    threads.reserve(plan.size());
    try {
      for (size_t r = 0; r < plan.size(); ++r)
        threads.emplace_back(run_rank, std::cref(info), std::ref(world), static_cast<int64_t>(r),
                             std::cref(plan[r]));
    } catch (const std::system_error& e) {
      // Ranks without a thread never finish: stop the started ones and report.
      world.fail(std::make_exception_ptr(
          InfraError("the reference interpreter could not start a thread for rank " +
                     std::to_string(threads.size()) + " of " + std::to_string(plan.size()) + ": " +
                     e.what())));
    }
    for (std::thread& t : threads) t.join();
  }
  if (std::exception_ptr error = world.failure()) std::rethrow_exception(error);
}

std::vector<Tensor> seeded_arguments(const Function& entry, uint64_t seed) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < entry.params.size(); ++i) {
    const Param& p = entry.params[i];
    // One stream per parameter, so one parameter's data does not depend on the others' sizes.
    SplitMix64 rng{seed ^ (0xd1b54a32d192ed03ull * (i + 1))};
    switch (p.kind) {
      case ParamKind::kWindow:
        throw ProgramError("parameter '" + p.name + "' of '" + entry.name +
                           "' is a window; an entry cannot take windows");
      case ParamKind::kScalar: {
        // A small positive value: scalars often count or scale things.
        Tensor t = Tensor::empty(p.dtype, {});
        auto* p0 = static_cast<std::byte*>(t.data());
        const auto k = static_cast<int64_t>(rng.next() % 4) + 1;
        if (is_float_dtype(p.dtype))
          interp::write_float(p0, p.dtype, static_cast<double>(k) / 2.0);
        else
          interp::write_int(p0, p.dtype, p.dtype == DType::kBool ? 1 : k);
        out.push_back(t);
        break;
      }
      case ParamKind::kTensor: {
        Tensor t = Tensor::empty(p.type.dtype, p.type.shape);  // zero-filled
        if (p.dir != Direction::kOut) {
          auto* bytes = static_cast<std::byte*>(t.data());
          const size_t esize = t.element_size();
          for (int64_t k = 0; k < t.numel(); ++k)
            write_seeded(bytes + static_cast<size_t>(k) * esize, t.dtype(), rng.next());
        }
        out.push_back(t);
        break;
      }
    }
  }
  return out;
}

}  // namespace pypto::compiler
