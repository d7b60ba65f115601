# Install and export rules: `cmake --install build --prefix P` gives P/include/quantc (the
# headers, under the same ir/, lower/, ptx/, runtime/ paths as in the source tree),
# P/lib (the static libraries, or with -DQUANTC_SHARED_LIBRARY=ON the one shared library
# libquantc.so) and P/lib/cmake/quantc (the package), so that another project can write
#
#   find_package(quantc REQUIRED)          # with CMAKE_PREFIX_PATH=P
#   target_link_libraries(app PRIVATE quantc::quantc)
#
# (see examples/embed). Included once, at the end of the top-level CMakeLists.txt, after
# every target exists.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(QUANTC_INSTALL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/quantc)
set(QUANTC_INSTALL_INCLUDE_DIR ${CMAKE_INSTALL_INCLUDEDIR}/quantc)

# Feature macros for embedders: which backends this build of quantc::quantc carries.
foreach(backend reference emulator cuda)
  string(TOUPPER ${backend} backend_upper)
  if(TARGET quantc_runtime_${backend})
    target_compile_definitions(quantc INTERFACE QUANTC_HAS_${backend_upper}_BACKEND=1)
  endif()
endforeach()

# The libraries every embedder links, in dependency order; backends that this checkout
# lacks are skipped.
set(quantc_component_targets)
foreach(target
    quantc_ir quantc_ops quantc_ptx quantc_lower quantc_driver
    quantc_runtime_core quantc_runtime_io quantc_runtime_backend_api quantc_runtime_reference
    quantc_runtime_emulator quantc_runtime_cuda quantc_runtime_registry)
  if(TARGET ${target})
    list(APPEND quantc_component_targets ${target})
  endif()
endforeach()

# Two flavors of the same package, find_package(quantc) + quantc::quantc either way:
#   cmake --install build [--prefix P]                      the static libraries (default)
#   cmake --install build --component shared [--prefix P]   libquantc.so (QUANTC_SHARED_LIBRARY)
# The static flavor needs every private dependency of every library at the embedder's
# link (fmt, OpenSSL, LLVMSupport, nvJitLink: the package finds them all); the shared one
# keeps them inside libquantc.so and needs only what the public headers include:
# nlohmann_json (op specs, profiles, converted layers) and the CUDA toolkit's cuda.h (the
# CUDA backend's device pointers and streams). Neither names a path of this machine.
function(quantc_install_flavor flavor export_targets dependencies)
  if(flavor STREQUAL "shared")
    set(component COMPONENT shared EXCLUDE_FROM_ALL)
  else()
    set(component)
  endif()
  install(TARGETS ${export_targets}
    EXPORT quantcTargets_${flavor}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} ${component}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} ${component}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} ${component}
    INCLUDES DESTINATION ${QUANTC_INSTALL_INCLUDE_DIR})
  foreach(layer ir lower ptx runtime)
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/${layer}
      DESTINATION ${QUANTC_INSTALL_INCLUDE_DIR} ${component}
      FILES_MATCHING PATTERN "*.h")
  endforeach()
  # Distinct file names: both flavors' exports are generated in the build tree side by side.
  set(targets_file quantcTargets-${flavor}.cmake)
  install(EXPORT quantcTargets_${flavor} FILE ${targets_file}
    NAMESPACE quantc::
    DESTINATION ${QUANTC_INSTALL_CMAKE_DIR} ${component})
  # The package configuration: find every dependency the exported targets name, then the targets.
  set(directory ${PROJECT_BINARY_DIR}/cmake/${flavor})
  file(WRITE ${directory}/quantcConfig.cmake.in "@PACKAGE_INIT@
include(CMakeFindDependencyMacro)
${dependencies}
include(\"\${CMAKE_CURRENT_LIST_DIR}/${targets_file}\")
check_required_components(quantc)
")
  configure_package_config_file(${directory}/quantcConfig.cmake.in ${directory}/quantcConfig.cmake
    INSTALL_DESTINATION ${QUANTC_INSTALL_CMAKE_DIR})
  write_basic_package_version_file(${directory}/quantcConfigVersion.cmake
    VERSION ${PROJECT_VERSION}
    COMPATIBILITY SameMinorVersion)
  install(FILES ${directory}/quantcConfig.cmake ${directory}/quantcConfigVersion.cmake
    DESTINATION ${QUANTC_INSTALL_CMAKE_DIR} ${component})
endfunction()

# The static flavor: the libraries, the umbrella quantc and what they carry: quantc_warnings
# and quantc_llvm_adt are exported because static libraries carry their PRIVATE link
# dependencies ($<LINK_ONLY:...>); warning flags never reach consumers.
quantc_install_flavor(static
  "quantc_warnings;quantc_llvm_adt;${quantc_component_targets};quantc_runtime;quantc"
  [=[find_dependency(fmt)
find_dependency(nlohmann_json 3)
find_dependency(OpenSSL)
find_dependency(CUDAToolkit)
include("${CMAKE_CURRENT_LIST_DIR}/QuantcNvJitLink.cmake")
find_dependency(LLVM 14 CONFIG)]=])
install(FILES ${PROJECT_SOURCE_DIR}/cmake/QuantcNvJitLink.cmake DESTINATION ${QUANTC_INSTALL_CMAKE_DIR})

if(QUANTC_SHARED_LIBRARY)
  # libquantc.so: every component library whole (all are position-independent), fmt,
  # OpenSSL, LLVMSupport and nvJitLink linked privately into it.
  add_library(quantc_shared SHARED ${PROJECT_SOURCE_DIR}/cmake/SharedLibrary.cpp)
  set_target_properties(quantc_shared PROPERTIES OUTPUT_NAME quantc EXPORT_NAME quantc
    VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
  target_link_libraries(quantc_shared
    # Not $<LINK_LIBRARY:WHOLE_ARCHIVE,...>: CMake 3.25 refuses it when the archives depend
    # on one another. Their dependencies follow, linked as usual.
    PRIVATE -Wl,--whole-archive ${quantc_component_targets} -Wl,--no-whole-archive
    PUBLIC nlohmann_json::nlohmann_json CUDA::toolkit)
  get_target_property(quantc_backend_macros quantc INTERFACE_COMPILE_DEFINITIONS)
  target_compile_definitions(quantc_shared INTERFACE ${quantc_backend_macros})
  quantc_install_flavor(shared quantc_shared "find_dependency(nlohmann_json 3)\nfind_dependency(CUDAToolkit)")
endif()
