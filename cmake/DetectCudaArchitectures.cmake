# Sets CMAKE_CUDA_ARCHITECTURES before project(): "native" where nvcc's device
# query finds a GPU, else 75;90: sm_75 code with compute_75 PTX (any GPU from Turing on) and
# sm_90 code with compute_90 PTX, since chapter 13's device calls (programmatic dependent launch)
# exist only in code compiled for 90 or newer: a build without it would run there and teach nothing.
find_program(CUDA_STREAMS_NVCC nvcc HINTS ENV CUDACXX PATHS /usr/local/cuda/bin NO_CACHE)
set(cuda_streams_detected_arch "")
if(CUDA_STREAMS_NVCC)
  get_filename_component(cuda_streams_nvcc_dir "${CUDA_STREAMS_NVCC}" DIRECTORY)
  if(EXISTS "${cuda_streams_nvcc_dir}/__nvcc_device_query")
    execute_process(COMMAND "${cuda_streams_nvcc_dir}/__nvcc_device_query"
                    RESULT_VARIABLE cuda_streams_query_status
                    OUTPUT_VARIABLE cuda_streams_query_output ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(cuda_streams_query_status EQUAL 0 AND cuda_streams_query_output MATCHES "^[0-9]")
      set(cuda_streams_detected_arch "${cuda_streams_query_output}")
    endif()
  endif()
endif()
if(cuda_streams_detected_arch)
  message(STATUS "cuda-streams: GPU found (compute capability ${cuda_streams_detected_arch}); building for native")
  set(CMAKE_CUDA_ARCHITECTURES native CACHE STRING "CUDA architectures to build for")
else()
  message(STATUS "cuda-streams: no GPU found at configure time; building for 75 and 90 (each with PTX: runs on any GPU from Turing on)")
  set(CMAKE_CUDA_ARCHITECTURES "75;90" CACHE STRING "CUDA architectures to build for")
endif()
