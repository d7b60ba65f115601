# Defines the imported target CUDA::nvJitLink when FindCUDAToolkit does not (CMake < 3.26).
# Used by the build and by the installed quantcConfig.cmake, so both name the same target.
# Requires find_package(CUDAToolkit) first.
if(NOT TARGET CUDA::nvJitLink)
  find_library(QUANTC_NVJITLINK_LIBRARY nvJitLink
    HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}
    PATH_SUFFIXES lib64 lib)
  if(NOT QUANTC_NVJITLINK_LIBRARY)
    message(FATAL_ERROR "quantc: libnvJitLink not found next to the CUDA toolkit in "
                        "'${CUDAToolkit_LIBRARY_DIR}'; install the toolkit's nvJitLink component")
  endif()
  add_library(CUDA::nvJitLink SHARED IMPORTED)
  set_target_properties(CUDA::nvJitLink PROPERTIES
    IMPORTED_LOCATION "${QUANTC_NVJITLINK_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${CUDAToolkit_INCLUDE_DIRS}")
endif()
