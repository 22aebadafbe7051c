# SPDX-License-Identifier: Apache-2.0
# What `cmake --install` puts where. Component `sdk`: the C/C++ SDK -- the library, its public
# header, a CMake package (find_package(onebit_ep) -> onebit::ep) and a pkg-config file, all
# relocatable. Component `python`, in a wheel build only (scikit-build-core sets SKBUILD and
# installs just this component): the library inside the Python package. One build tree can so
# give both packages the same library (scripts/build_wheel.sh, scripts/build_sdk.sh).
include(GNUInstallDirs)

if(SKBUILD)
  install(TARGETS onebit_ep LIBRARY DESTINATION onnxruntime_ep_onebit COMPONENT python)
endif()

set_target_properties(onebit_ep PROPERTIES EXPORT_NAME ep)
install(TARGETS onebit_ep EXPORT onebit_ep_targets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT sdk
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/onebit_ep.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT sdk)
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT sdk)

set(config_dir ${CMAKE_INSTALL_LIBDIR}/cmake/onebit_ep)
install(EXPORT onebit_ep_targets NAMESPACE onebit:: FILE onebit_ep-targets.cmake DESTINATION ${config_dir}
  COMPONENT sdk)
include(CMakePackageConfigHelpers)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/onebit_ep-config.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/onebit_ep-config.cmake INSTALL_DESTINATION ${config_dir})
# 0.x: a minor release may change the C interface, so only the same minor version is compatible.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/onebit_ep-config-version.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/onebit_ep-config.cmake ${CMAKE_CURRENT_BINARY_DIR}/onebit_ep-config-version.cmake
  DESTINATION ${config_dir} COMPONENT sdk)

set(pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH ONEBIT_PC_TO_PREFIX /prefix/${pc_dir} /prefix)
string(REGEX REPLACE "/$" "" ONEBIT_PC_TO_PREFIX "${ONEBIT_PC_TO_PREFIX}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/onebit_ep.pc.in ${CMAKE_CURRENT_BINARY_DIR}/onebit_ep.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/onebit_ep.pc DESTINATION ${pc_dir} COMPONENT sdk)
