/**
 * @file device_clock.cuh
 * @brief The GPU's nanosecond wall clock, for kernels that must take a known time.
 *
 * The chapters about time use kernels that spin for a fixed duration: their
 * length then does not depend on the clock rate, the data or the GPU model,
 * so every ratio a chapter measures has a known ideal. Include this header
 * in `.cu` files only (it declares device code).
 */
#pragma once

namespace cs {

/// Nanoseconds on the GPU's global timer (the PTX special register `%globaltimer`), shared by
/// all SMs. It may advance in steps of up to a microsecond, which is fine for waits of
/// microseconds to milliseconds.
__device__ inline unsigned long long globaltimer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

}  // namespace cs
