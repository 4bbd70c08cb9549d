// SPDX-License-Identifier: MIT
// Deprecated spelling, kept for one release: tokchron-report's library moved from
// examples/trace_report/ to tools/report/; include "report/report.hpp".
#ifndef TOKCHRON_TOOLS_TRACE_REPORT_REPORT_HPP
#define TOKCHRON_TOOLS_TRACE_REPORT_REPORT_HPP
#if defined(__GNUC__) || defined(__clang__)
#pragma message("\"trace_report/report.hpp\" is deprecated: include \"report/report.hpp\"")
#endif
#include "report/report.hpp"
#endif  // TOKCHRON_TOOLS_TRACE_REPORT_REPORT_HPP
