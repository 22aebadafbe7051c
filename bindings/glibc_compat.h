// SPDX-License-Identifier: Apache-2.0
// Force-included into the addon and the EP library built for packaging: binds libdl symbols to
// their oldest versions, so the binaries run on any glibc that ORT itself runs on (2.28), not only
// on the glibc of the build machine (which versions dlopen & co. at 2.34).
#pragma once
#include <features.h>
#if defined(__linux__) && defined(__x86_64__) && defined(__GLIBC__)
__asm__(".symver dlopen,dlopen@GLIBC_2.2.5");
__asm__(".symver dlsym,dlsym@GLIBC_2.2.5");
__asm__(".symver dlerror,dlerror@GLIBC_2.2.5");
__asm__(".symver dlclose,dlclose@GLIBC_2.2.5");
// gcc 12's libstdc++ exports condition_variable::wait at GLIBCXX_3.4.30 as well as at its original
// 3.4.11; bind the original, which every libstdc++ ORT runs with has.
__asm__(
    ".symver _ZNSt18condition_variable4waitERSt11unique_lockISt5mutexE,"
    "_ZNSt18condition_variable4waitERSt11unique_lockISt5mutexE@GLIBCXX_3.4.11");
#endif
