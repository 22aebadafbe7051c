# SPDX-License-Identifier: Apache-2.0
# Shipped binaries (npm prebuilds, the wheel, the SDK) must load on the glibc and libstdc++ ORT
# itself needs (glibc 2.28), not only on the build machine's. With ONEBIT_PORTABLE_GLIBC (always
# under cmake-js), every translation unit of targets defined after this file force-includes
# bindings/glibc_compat.h, which binds the few symbols gcc 12 would version newer -- so a library
# added later is covered without being listed; onebit_portable_glibc(<shared target>) adds
# glibc_compat.cpp, each shared binary's own copy of two more.
if(ONEBIT_PORTABLE_GLIBC OR CMAKE_JS_VERSION)
  add_compile_options(-include ${PROJECT_SOURCE_DIR}/bindings/glibc_compat.h)
endif()

function(onebit_portable_glibc target)
  if(ONEBIT_PORTABLE_GLIBC OR CMAKE_JS_VERSION)
    target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/bindings/glibc_compat.cpp)
  endif()
endfunction()
