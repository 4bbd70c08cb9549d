// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_EXPORT_BUCKETS_HPP
#define TOKCHRON_EXPORT_BUCKETS_HPP

/// \file
/// Deprecated path, kept for one release: the header is tokchron/exposition/buckets.hpp (the
/// exposition format, below both live/ and export/). Include that instead.

#include "tokchron/exposition/buckets.hpp"  // IWYU pragma: export

#endif  // TOKCHRON_EXPORT_BUCKETS_HPP
