// SPDX-License-Identifier: MIT
// Batch and single inserts from a translation unit of their own, default flags (-O3 in Release):
// see batch_tu_body.hpp.
#define TOKCHRON_BENCH_TU "generic"
#include "batch_tu_body.hpp"
