# Install and export rules: `cmake --install build --prefix P` gives P/include/quantc (the
# headers, under the same ir/, lower/, ptx/, runtime/ paths as in the source tree),
# P/lib (the static libraries) and P/lib/cmake/quantc (the package), so that another
# project can write
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

# Every library target, in dependency order; backends that this checkout lacks are skipped.
# quantc_warnings and quantc_llvm_adt are exported because static libraries carry their
# PRIVATE link dependencies ($<LINK_ONLY:...>); warning flags never reach consumers.
set(quantc_export_targets)
foreach(target
    quantc_warnings quantc_llvm_adt
    quantc_ir quantc_ops quantc_ptx quantc_lower quantc_driver
    quantc_runtime_core quantc_runtime_io quantc_runtime_backend_api quantc_runtime_reference
    quantc_runtime_emulator quantc_runtime_cuda quantc_runtime_registry quantc_runtime
    quantc)
  if(TARGET ${target})
    list(APPEND quantc_export_targets ${target})
  endif()
endforeach()

install(TARGETS ${quantc_export_targets}
  EXPORT quantcTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${QUANTC_INSTALL_INCLUDE_DIR})

foreach(layer ir lower ptx runtime)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${layer}
    DESTINATION ${QUANTC_INSTALL_INCLUDE_DIR}
    FILES_MATCHING PATTERN "*.h")
endforeach()

install(EXPORT quantcTargets
  NAMESPACE quantc::
  DESTINATION ${QUANTC_INSTALL_CMAKE_DIR})

# The package configuration: find every dependency the exported targets name, then the targets.
set(quantc_config_template ${PROJECT_BINARY_DIR}/cmake/quantcConfig.cmake.in)
file(WRITE ${quantc_config_template} [=[
@PACKAGE_INIT@
include(CMakeFindDependencyMacro)
find_dependency(fmt)
find_dependency(nlohmann_json 3)
find_dependency(OpenSSL)
find_dependency(CUDAToolkit)
include("${CMAKE_CURRENT_LIST_DIR}/QuantcNvJitLink.cmake")
find_dependency(LLVM 14 CONFIG)
include("${CMAKE_CURRENT_LIST_DIR}/quantcTargets.cmake")
check_required_components(quantc)
]=])
configure_package_config_file(${quantc_config_template}
  ${PROJECT_BINARY_DIR}/cmake/quantcConfig.cmake
  INSTALL_DESTINATION ${QUANTC_INSTALL_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/quantcConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/cmake/quantcConfig.cmake
  ${PROJECT_BINARY_DIR}/cmake/quantcConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/QuantcNvJitLink.cmake
  DESTINATION ${QUANTC_INSTALL_CMAKE_DIR})
