# Sets CMAKE_CUDA_ARCHITECTURES before project() for the "portable" preset: every architecture
# from Turing (75) to Hopper (90), and Blackwell (100, 120) where the nvcc in hand is 12.8 or
# newer. The last one also carries PTX (CMake's default), so newer GPUs still run the programs.
find_program(CUDA_STREAMS_NVCC nvcc HINTS ENV CUDACXX PATHS /usr/local/cuda/bin NO_CACHE)
set(cuda_streams_nvcc_version "")
if(DEFINED ENV{CUDACXX} AND NOT "$ENV{CUDACXX}" STREQUAL "")
  set(CUDA_STREAMS_NVCC "$ENV{CUDACXX}")
elseif(DEFINED CMAKE_CUDA_COMPILER)
  set(CUDA_STREAMS_NVCC "${CMAKE_CUDA_COMPILER}")
endif()
if(CUDA_STREAMS_NVCC)
  execute_process(COMMAND "${CUDA_STREAMS_NVCC}" --version OUTPUT_VARIABLE cuda_streams_nvcc_output
                  ERROR_QUIET RESULT_VARIABLE cuda_streams_nvcc_status)
  if(cuda_streams_nvcc_status EQUAL 0 AND cuda_streams_nvcc_output MATCHES "release ([0-9]+\\.[0-9]+)")
    set(cuda_streams_nvcc_version "${CMAKE_MATCH_1}")
  endif()
endif()
set(cuda_streams_portable_archs 75 80 86 89 90)
if(cuda_streams_nvcc_version AND cuda_streams_nvcc_version VERSION_GREATER_EQUAL 12.8)
  list(APPEND cuda_streams_portable_archs 100 120)
endif()
if(cuda_streams_nvcc_version)
  message(STATUS "cuda-streams: portable build with nvcc ${cuda_streams_nvcc_version}: "
                 "architectures ${cuda_streams_portable_archs}")
else()
  message(STATUS "cuda-streams: portable build, nvcc version unknown: architectures ${cuda_streams_portable_archs}")
endif()
set(CMAKE_CUDA_ARCHITECTURES "${cuda_streams_portable_archs}" CACHE STRING "CUDA architectures to build for")
