// SPDX-License-Identifier: MIT
// tokchron-requires: nlohmann-json
#ifndef TOKCHRON_TOOLS_REPORT_REPORT_HPP
#define TOKCHRON_TOOLS_REPORT_REPORT_HPP

/// \file
/// The library behind `tokchron-report` (CMake target `tokchron_report_lib`), one header per
/// job: options.hpp (command line, exit codes), inputs.hpp (traces and vLLM files, streamed or
/// loaded), summaries.hpp (one summary per profile), writers.hpp (table, CSV, JSON, input
/// messages), sla.hpp (--slo, --goodput, claim files) and commands.hpp (the commands and
/// `run`). This header includes them all.

#include "align.hpp"
#include "commands.hpp"
#include "inputs.hpp"
#include "join.hpp"
#include "options.hpp"
#include "sla.hpp"
#include "summaries.hpp"
#include "writers.hpp"

#endif  // TOKCHRON_TOOLS_REPORT_REPORT_HPP
