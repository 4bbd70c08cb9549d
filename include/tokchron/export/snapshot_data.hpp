// SPDX-License-Identifier: MIT
#ifndef TOKCHRON_EXPORT_SNAPSHOT_DATA_HPP
#define TOKCHRON_EXPORT_SNAPSHOT_DATA_HPP

/// \file
/// Deprecated path, kept for one release: the header is tokchron/exposition/snapshot_data.hpp (the
/// exposition format, below both live/ and export/). Include that instead.

#include "tokchron/exposition/snapshot_data.hpp"  // IWYU pragma: export

#endif  // TOKCHRON_EXPORT_SNAPSHOT_DATA_HPP
