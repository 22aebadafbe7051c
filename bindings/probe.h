// SPDX-License-Identifier: Apache-2.0
// probe(options) -> Promise<result>: the per-shape probe (probes/shape_probe.h) on libuv's thread
// pool. Needs neither ORT nor the EP library loaded.
#pragma once
#include <napi.h>

namespace onebit::node {

Napi::Value probe(const Napi::CallbackInfo& info);

}  // namespace onebit::node
