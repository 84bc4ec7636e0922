#include "cuda_streams/verify.hpp"

#include <cstdio>
#include <vector>

#include "cuda_streams/report.hpp"

namespace cs {

Comparison compare_product(const float* a, const float* b, const float* product, std::size_t n,
                           double tolerance) {
  const std::size_t count = n * n, samples = count <= 65536 ? count : 4096;
  std::vector<std::size_t> at(samples);
  std::vector<double> got(samples), want(samples);
  for (std::size_t s = 0; s < samples; ++s) {
    const std::size_t i = samples == count   ? s
                          : s + 1 == samples ? count - 1
                                             : s * 2654435761u % count;
    for (std::size_t k = 0; k < n; ++k) want[s] += double(a[i / n * n + k]) * b[k * n + i % n];
    got[s] = product[i], at[s] = i;
  }
  Comparison result = compare(got.data(), want.data(), samples, tolerance);
  for (Mismatch& m : result.first) m.index = at[m.index];
  return result;
}

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

bool verify_product(const std::string& name, const float* a, const float* b, const float* product,
                    std::size_t n, double tolerance) {
  const Comparison result = compare_product(a, b, product, n, tolerance);
  return report_comparison(name + " (" + std::to_string(result.total) + " entries)", result);
}

}  // namespace cs
