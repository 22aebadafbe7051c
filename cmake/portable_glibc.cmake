# SPDX-License-Identifier: Apache-2.0
# Shipped binaries (npm prebuilds, the wheel, the SDK) must load on the glibc and libstdc++ ORT
# itself needs (glibc 2.28), not only on the build machine's: bindings/glibc_compat.h binds the
# few symbols gcc 12 would version newer, and glibc_compat.cpp gives each shared binary its own
# copy of two more.
function(onebit_portable_glibc)
  foreach(target ${ARGN})
    target_compile_options(${target} PRIVATE -include ${PROJECT_SOURCE_DIR}/bindings/glibc_compat.h)
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "SHARED_LIBRARY" OR type STREQUAL "MODULE_LIBRARY")
      target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/bindings/glibc_compat.cpp)
    endif()
  endforeach()
endfunction()
