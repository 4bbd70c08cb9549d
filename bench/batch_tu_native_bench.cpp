// SPDX-License-Identifier: MIT
// Batch and single inserts from a translation unit of their own compiled with -march=native
// (bench/CMakeLists.txt sets it on this file alone): see batch_tu_body.hpp.
//
// The library and the baseline are put in namespaces of their own here (tokchron::v1_native,
// tokchron_v0_native): the inline functions this file instantiates are compiled for the host's
// instruction set, and under the usual names the linker would keep one copy of each for the
// whole binary, so the generic file could end up running this file's code or the reverse.
#include "tokchron/config.hpp"
#undef TOKCHRON_BEGIN_NAMESPACE
#undef TOKCHRON_END_NAMESPACE
#define TOKCHRON_BEGIN_NAMESPACE \
  namespace tokchron {           \
  inline namespace v1_native {
#define TOKCHRON_END_NAMESPACE \
  }                            \
  }
#define TOKCHRON_BENCH_V0_NAMESPACE tokchron_v0_native
#define TOKCHRON_BENCH_TU "native"
#include "batch_tu_body.hpp"
