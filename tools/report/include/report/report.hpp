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

#include "report/align.hpp"
#include "report/commands.hpp"
#include "report/inputs.hpp"
#include "report/join.hpp"
#include "report/options.hpp"
#include "report/sla.hpp"
#include "report/summaries.hpp"
#include "report/writers.hpp"

#endif  // TOKCHRON_TOOLS_REPORT_REPORT_HPP
