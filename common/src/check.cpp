#include "cuda_streams/check.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cuda_streams/device.hpp"

namespace cs {

bool is_no_device_error(cudaError_t error) {
  return error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver ||
         error == cudaErrorSystemDriverMismatch || error == cudaErrorCompatNotSupportedOnDevice;
}

namespace detail {

void check_cuda(cudaError_t error, const char* expression, const char* file, int line) {
  if (error == cudaSuccess) return;
  if (is_no_device_error(error)) {
    skip(std::string("no usable CUDA device (") + cudaGetErrorName(error) + ": " +
         cudaGetErrorString(error) + ")");
  }
  const char* slash = std::strrchr(file, '/');
  std::fflush(stdout);
  std::fprintf(stderr, "CUDA error at %s:%d: %s returned %s (%s)\n", slash ? slash + 1 : file, line,
               expression, cudaGetErrorName(error), cudaGetErrorString(error));
  std::exit(kFailExitCode);
}

}  // namespace detail
}  // namespace cs
