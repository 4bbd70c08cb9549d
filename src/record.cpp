// SPDX-License-Identifier: MIT
// The tokchron::record library: the explicit instantiations of separate mode (record.hpp's one
// list), compiled once, for programs that link tokchron::record instead of keeping a file of
// their own with tokchron/record_instantiate.hpp.
#include "tokchron/record_instantiate.hpp"
