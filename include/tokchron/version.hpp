// tokchron: exact, shared latency and throughput definitions for LLM serving.
// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_VERSION_HPP
#define TOKCHRON_VERSION_HPP

/// Major, minor and patch numbers of this copy of tokchron.
#define TOKCHRON_VERSION_MAJOR 0
#define TOKCHRON_VERSION_MINOR 1
#define TOKCHRON_VERSION_PATCH 0

/// One integer that orders releases: major * 10000 + minor * 100 + patch.
#define TOKCHRON_VERSION \
  (TOKCHRON_VERSION_MAJOR * 10000 + TOKCHRON_VERSION_MINOR * 100 + TOKCHRON_VERSION_PATCH)

/// The same version as text, e.g. "0.1.0".
#define TOKCHRON_VERSION_STRING "0.1.0"

#endif  // TOKCHRON_VERSION_HPP
