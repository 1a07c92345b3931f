#include "orchestration/args_dump.h"

#include <cstring>

#include "orchestration/region.h"

namespace pypto::chip {

std::string view_bytes(const pypto_tensor& view) {
  const Region region = Region::of(view);
  const int64_t esize = region.element_size;
  int64_t numel = 1;
  for (int d = 0; d < region.ndim; ++d) numel *= std::max<int64_t>(view.shape[d], 0);
  std::string out(static_cast<size_t>(numel * esize), '\0');
  if (numel == 0) return out;
  const char* base = static_cast<const char*>(view.data);
  int64_t index[PYPTO_MAX_DIMS] = {};
  for (int64_t n = 0; n < numel; ++n) {
    int64_t element = view.offset;
    for (int d = 0; d < region.ndim; ++d) element += index[d] * view.strides[d];
    std::memcpy(out.data() + n * esize, base + element * esize, static_cast<size_t>(esize));
    for (int d = region.ndim - 1; d >= 0; --d) {
      if (++index[d] < view.shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

}  // namespace pypto::chip
