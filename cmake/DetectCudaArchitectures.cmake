# Sets CMAKE_CUDA_ARCHITECTURES before project(): "native" where nvcc's device
# query finds a GPU, else 75 (sm_75 code plus compute_75 PTX).
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
  message(STATUS "cuda-streams: no GPU found at configure time; building for 75 (runs on any newer GPU through PTX)")
  set(CMAKE_CUDA_ARCHITECTURES 75 CACHE STRING "CUDA architectures to build for")
endif()
