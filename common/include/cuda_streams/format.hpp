/**
 * @file format.hpp
 * @brief One way to turn numbers into text across the chapters.
 */
#pragma once

#include <string>

namespace cs {

/// printf into a std::string: `cs::format("%d streams", n)`.
std::string format(const char* pattern, ...) __attribute__((format(printf, 1, 2)));

/// A duration for people: "12.3 ms" from 10 ms up, "1.23 ms" down to 1 ms, "45.6 us" below.
std::string format_ms(double ms);

}  // namespace cs
