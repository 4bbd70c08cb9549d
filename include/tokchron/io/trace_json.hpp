// SPDX-License-Identifier: MIT
// tokchron-requires: nlohmann-json
#ifndef TOKCHRON_IO_TRACE_JSON_HPP
#define TOKCHRON_IO_TRACE_JSON_HPP

/// \file
/// JSON for request traces (an adaptor: needs nlohmann-json, Debian nlohmann-json3-dev), all
/// of it:
///  - io/trace_json_reader.hpp: `parse_trace_line` / `read_trace`, tokchron's JSON Lines trace
///    format; a malformed line names its line and field and is skipped;
///  - io/trace_json_writer.hpp: `to_json_line` / `write_trace_line`;
///  - io/vllm_result.hpp: `read_vllm_result`, vLLM's `--save-result --save-detailed` file.
/// The fields of a line are listed once, in io/trace.hpp (`detail::trace_fields`).

#include "tokchron/io/trace_json_reader.hpp"
#include "tokchron/io/trace_json_writer.hpp"
#include "tokchron/io/vllm_result.hpp"

#endif  // TOKCHRON_IO_TRACE_JSON_HPP
