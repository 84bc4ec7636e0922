/**
 * @file verify.hpp
 * @brief Comparing GPU results with a CPU reference, reporting the first mismatches.
 */
#pragma once

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

namespace cs {

/// One element whose result differs from the reference.
struct Mismatch {
  std::size_t index;  ///< its position
  double got;         ///< the GPU's value
  double want;        ///< the CPU reference's value
};

/// The outcome of comparing two arrays.
struct Comparison {
  std::size_t total = 0;        ///< elements compared
  std::size_t wrong = 0;        ///< elements that differ by more than the tolerance
  std::vector<Mismatch> first;  ///< the first few of them, in index order
};

/**
 * @brief Compares @p got with @p want element by element.
 *
 * An element matches when |got - want| <= tolerance * max(1, |want|); NaN
 * never matches. Keeps the first @p keep mismatches.
 */
template <class T>
Comparison compare(const T* got, const T* want, std::size_t count, double tolerance = 0.0,
                   std::size_t keep = 5) {
  Comparison result;
  result.total = count;
  for (std::size_t i = 0; i < count; ++i) {
    const double g = static_cast<double>(got[i]);
    const double w = static_cast<double>(want[i]);
    const double allowed = tolerance * std::fmax(1.0, std::fabs(w));
    const bool same = (g == w) || (std::fabs(g - w) <= allowed);  // NaN compares false
    if (!same) {
      if (result.first.size() < keep) result.first.push_back({i, g, w});
      ++result.wrong;
    }
  }
  return result;
}

/// Adds @p one (a comparison of one run) to @p all (every run so far), keeping the first @p keep
/// mismatches, so that repeated runs end in one CHECK line.
inline void accumulate(Comparison& all, const Comparison& one, std::size_t keep = 5) {
  all.total += one.total;
  all.wrong += one.wrong;
  for (const Mismatch& m : one.first) {
    if (all.first.size() < keep) all.first.push_back(m);
  }
}

/**
 * @brief Compares entries of @p product with the n x n row-major product @p a x @p b, computed on
 * the CPU in double precision.
 *
 * Every entry of a product of at most 65536 entries; else 4096 of them: entry s * 2654435761 mod
 * n * n (a prime stride past n * n reaches no entry twice and spreads over rows and columns, where
 * an even stride can fall on the diagonal alone, which a transposed product also gets right), the
 * last entry last. Mismatches name the entry's index. For column-major matrices (cuBLAS) pass
 * @p b, @p a: their row-major views are the transposes, and (A B)^T = B^T A^T.
 */
Comparison compare_product(const float* a, const float* b, const float* product, std::size_t n,
                           double tolerance = 0.0);

/// compare_product() then report_comparison(), the check named `<name> (<K> entries)`.
bool verify_product(const std::string& name, const float* a, const float* b, const float* product,
                    std::size_t n, double tolerance = 0.0);

/// Prints the CHECK line for @p result (`0 of N values differ from the CPU reference`) and the
/// first mismatches; counts it as a check and returns whether everything matched.
bool report_comparison(const std::string& name, const Comparison& result);

/// compare() then report_comparison().
template <class T>
bool verify(const std::string& name, const T* got, const T* want, std::size_t count,
            double tolerance = 0.0) {
  return report_comparison(name, compare(got, want, count, tolerance));
}

/// verify() for two vectors of the same length.
template <class T>
bool verify(const std::string& name, const std::vector<T>& got, const std::vector<T>& want,
            double tolerance = 0.0) {
  if (got.size() != want.size()) {
    Comparison sizes;
    sizes.total = want.size();
    sizes.wrong = want.size();
    return report_comparison(name + " (length " + std::to_string(got.size()) +
                                 " != " + std::to_string(want.size()) + ")",
                             sizes);
  }
  return verify(name, got.data(), want.data(), got.size(), tolerance);
}

}  // namespace cs
