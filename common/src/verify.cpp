#include "cuda_streams/verify.hpp"

#include <cstdio>

#include "cuda_streams/report.hpp"

namespace cs {

bool report_comparison(const std::string& name, const Comparison& result) {
  const bool passed = result.wrong == 0 && result.total > 0;
  std::string detail = std::to_string(result.wrong) + " of " + std::to_string(result.total) +
                       " values differ from the CPU reference";
  if (result.total == 0) detail = "nothing was compared";
  check_that(name, passed, detail);
  for (const Mismatch& m : result.first) {
    std::printf("      [%zu] got %.9g, want %.9g\n", m.index, m.got, m.want);
  }
  if (result.wrong > result.first.size()) {
    std::printf("      ... and %zu more\n", result.wrong - result.first.size());
  }
  return passed;
}

}  // namespace cs
