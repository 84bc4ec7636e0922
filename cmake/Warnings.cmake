# Warning flags for every target of the project: host code (g++ directly, and
# g++ behind nvcc) and device code (nvcc, ptxas).
set(cuda_streams_host_warnings -Wall -Wextra -Wshadow -Wno-unknown-pragmas)
set(cuda_streams_cuda_warnings "SHELL:-Xcompiler=-Wall,-Wextra,-Wno-unknown-pragmas")
if(CUDA_STREAMS_WERROR)
  list(APPEND cuda_streams_host_warnings -Werror)
  list(APPEND cuda_streams_cuda_warnings "SHELL:-Werror all-warnings" "SHELL:-Xcompiler=-Werror")
endif()

# Applies the project's warning flags to @p target.
function(cuda_streams_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:${cuda_streams_host_warnings}>
    $<$<COMPILE_LANGUAGE:CUDA>:${cuda_streams_cuda_warnings}>)
endfunction()
