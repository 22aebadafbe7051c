/* SPDX-License-Identifier: Apache-2.0 */
/* The public C interface of libonebit_ep.so beyond ORT's two plugin-EP entry points
 * (CreateEpFactories, ReleaseEpFactory): the names a host looks for, the library's version,
 * and its tracing counters as numbers. C and C++. */
#ifndef ONEBIT_EP_H
#define ONEBIT_EP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The EP's name, as OrtEpDevice's EpDevice_EpName and a session's provider list report it. */
#define ONEBIT_EP_NAME "OnebitExecutionProvider"
/* The registration name this project's hosts use with RegisterExecutionProviderLibrary. Any name
 * works; provider options reach the EP the same way whatever it is. */
#define ONEBIT_EP_REGISTRATION_NAME "onebit"
/* The library's semantic version (also the factory's GetVersion and the npm package's). */
#define ONEBIT_EP_VERSION "0.1.0"

#if defined(__GNUC__)
#define ONEBIT_EP_EXPORT __attribute__((visibility("default")))
#else
#define ONEBIT_EP_EXPORT
#endif

/* One named counter; names are static strings owned by the library (snake_case, e.g. group_runs). */
typedef struct OnebitEpCounter {
  const char* name;
  uint64_t value;
} OnebitEpCounter;

/* The ORT API version this library asks the runtime for: the lowest it needs (older ORT refuses it at registration). */
ONEBIT_EP_EXPORT int OnebitEp_OrtApiVersion(void);

/* ONEBIT_EP_VERSION of the library actually loaded. */
ONEBIT_EP_EXPORT const char* OnebitEp_Version(void);

/* Writes up to `capacity` counters of the session whose `session_id` provider option is
 * `session_id` (or, for a null or empty id, the process-wide sums) into `out`. Returns how many
 * counters exist, or -1 when no live session has that id. Call with capacity 0 to ask for the count. */
ONEBIT_EP_EXPORT int64_t OnebitEp_GetCounters(const char* session_id, OnebitEpCounter* out, size_t capacity);

#ifdef __cplusplus
}
#endif

#endif /* ONEBIT_EP_H */
