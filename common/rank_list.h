// "0-3, 5": a sorted list of ranks as messages and reports print it.
#pragma once

#include <string>
#include <vector>

namespace pypto {

std::string rank_list(const std::vector<int>& ranks);

}  // namespace pypto
