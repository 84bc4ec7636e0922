#include "cuda_streams/format.hpp"

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <vector>

namespace cs {

std::string format(const char* pattern, ...) {
  va_list args;
  va_start(args, pattern);
  va_list copy;
  va_copy(copy, args);
  const int length = std::vsnprintf(nullptr, 0, pattern, copy);
  va_end(copy);
  std::vector<char> text(static_cast<std::size_t>(length > 0 ? length : 0) + 1);
  std::vsnprintf(text.data(), text.size(), pattern, args);
  va_end(args);
  return std::string(text.data(), text.size() - 1);
}

std::string format_ms(double ms) {
  const double magnitude = std::fabs(ms);
  if (magnitude >= 10) return format("%.1f ms", ms);
  if (magnitude >= 1) return format("%.2f ms", ms);
  return format("%.1f us", ms * 1000.0);
}

}  // namespace cs
