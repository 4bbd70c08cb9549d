// SPDX-License-Identifier: MIT
// tokchron-requires: nlohmann-json
#include "sse.hpp"

#include <algorithm>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

namespace tokchron_bench {

const char* failure_name(failure_kind k) noexcept {
  switch (k) {
    case failure_kind::none: return "none";
    case failure_kind::connect: return "connect";
    case failure_kind::timeout: return "timeout";
    case failure_kind::connection: return "connection";
    case failure_kind::http_status: return "http_status";
    case failure_kind::http_framing: return "http_framing";
    case failure_kind::not_sse: return "not_sse";
    case failure_kind::ended_early: return "ended_early";
    case failure_kind::sse_line: return "sse_line";
    case failure_kind::sse_too_long: return "sse_too_long";
    case failure_kind::sse_json: return "sse_json";
    case failure_kind::sse_event: return "sse_event";
    case failure_kind::usage: return "usage";
    case failure_kind::server_error: return "server_error";
  }
  return "unknown";
}

namespace {
// Appends to a buffer whose size stays within `max_sse_line` (the caller checks), growing it
// geometrically but never past `max_sse_line`, so its capacity is bounded too.
void append_bounded(std::string& buf, std::string_view bytes) {
  const std::size_t need = buf.size() + bytes.size();
  if (need > buf.capacity())
    buf.reserve(std::min(std::max(need, 2 * buf.capacity()), max_sse_line));
  buf.append(bytes);
}
}  // namespace

bool sse_decoder::fail(failure_kind k, std::string why) {
  if (error_.empty()) {
    error_ = std::move(why);
    kind_ = k;
  }
  return false;
}

std::string sse_decoder::unfinished() const {
  if (has_data_) return ", inside an event (a data line without the blank line that ends it)";
  if (!line_.empty()) return ", inside a line";
  return std::string();
}

bool sse_decoder::feed(std::string_view bytes, clock::time_point t) {
  if (failed()) return false;
  while (!bytes.empty()) {
    if (after_cr_) {  // the last line ended with CR: an LF right after it ends the same line
      after_cr_ = false;
      if (bytes.front() == '\n') {
        bytes.remove_prefix(1);
        continue;
      }
    }
    const auto end = bytes.find_first_of("\r\n");
    const std::string_view part = bytes.substr(0, end);
    if (line_.size() + part.size() > max_sse_line)
      return fail(failure_kind::sse_too_long, "SSE line " + std::to_string(lines_ + 1) +
                                                  " is longer than " +
                                                  std::to_string(max_sse_line) + " bytes");
    if (end == std::string_view::npos) {
      append_bounded(line_, part);
      return true;
    }
    after_cr_ = bytes[end] == '\r';
    bytes.remove_prefix(end + 1);
    std::string_view l;
    if (line_.empty()) {
      l = part;
    } else {
      append_bounded(line_, part);
      l = line_;
    }
    const bool ok = line(l, t);
    line_.clear();
    if (!ok) return false;
  }
  return true;
}

// One line of the stream (SSE: "field: value", ":" comment, blank = end of event). A line
// without a colon is a field with an empty value in the SSE grammar, but no OpenAI-compatible
// server sends one: it is taken as a broken stream (the line is named in the reason).
bool sse_decoder::line(std::string_view l, clock::time_point t) {
  ++lines_;
  if (l.empty()) return event(t);
  if (l.front() == ':') return true;
  const auto colon = l.find(':');
  if (colon == std::string_view::npos)
    return fail(failure_kind::sse_line, "SSE line " + std::to_string(lines_) +
                                            " is not a field: '" + std::string(l.substr(0, 80)) +
                                            "'");
  const std::string_view field = l.substr(0, colon);
  std::string_view value = l.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field != "data") return true;  // event, id, retry: nothing to record
  if (data_.size() + value.size() + (has_data_ ? 1 : 0) > max_sse_line)
    return fail(failure_kind::sse_too_long, "SSE event " + std::to_string(events_ + 1) +
                                                " is longer than " + std::to_string(max_sse_line) +
                                                " bytes");
  if (has_data_) append_bounded(data_, "\n");
  append_bounded(data_, value);
  has_data_ = true;
  return true;
}

bool sse_decoder::event(clock::time_point t) {
  if (!has_data_) return true;
  has_data_ = false;
  const std::string data = std::move(data_);
  data_.clear();
  ++events_;
  const std::string where = "SSE event " + std::to_string(events_);
  if (done_) return fail(failure_kind::sse_line, where + " comes after [DONE]");
  if (events_ > max_stream_events)
    return fail(failure_kind::sse_too_long,
                "more than " + std::to_string(max_stream_events) + " SSE events without [DONE]");
  if (data == "[DONE]") {
    done_ = true;
    (void)tl_->chunk(t, 0, tc::chunk_kind::done);
    (void)tl_->finish(t, reason_);
    return true;
  }
  const auto j = nlohmann::json::parse(data, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return fail(failure_kind::sse_json,
                where + " is not a JSON object: '" + data.substr(0, 80) + "'");
  if (const auto e = j.find("error"); e != j.end()) {
    std::string msg = e->dump();
    if (e->is_object() && e->contains("message") && (*e)["message"].is_string())
      msg = (*e)["message"].get<std::string>();
    return fail(failure_kind::server_error, "server error in the stream: " + msg.substr(0, 200));
  }
  bool has_choice = false, has_text = false, has_reasoning = false;
  // A string field that is present and not empty; a field of another type (null aside) fails.
  const auto nonempty = [&](const nlohmann::json& obj, const char* field, bool& bad) {
    const auto x = obj.find(field);
    if (x == obj.end() || x->is_null()) return false;
    if (!x->is_string()) bad = true;
    return x->is_string() && !x->get_ref<const std::string&>().empty();
  };
  std::optional<tc::finish_reason> reason;
  if (const auto c = j.find("choices"); c != j.end() && c->is_array() && !c->empty()) {
    const auto& c0 = c->front();
    if (!c0.is_object())
      return fail(failure_kind::sse_event, where + ": choices[0] is not an object");
    has_choice = true;
    bool bad = false;
    if (endpoint_ == endpoint_kind::chat) {
      // Reasoning models' thinking comes in its own delta field: `reasoning_content` (vLLM's
      // DeltaMessage, vllm/entrypoints/openai/protocol.py at
      // 0052bed36509c7a5a2d8e48265334e40cf2f5a0e; SGLang, DeepSeek) or `reasoning` (later vLLM
      // versions).
      if (const auto d = c0.find("delta"); d != c0.end() && d->is_object()) {
        has_text = nonempty(*d, "content", bad);
        has_reasoning = nonempty(*d, "reasoning_content", bad) || nonempty(*d, "reasoning", bad);
      }
    } else {
      has_text = nonempty(c0, "text", bad);
    }
    if (bad) return fail(failure_kind::sse_event, where + ": the choice's text is not a string");
    if (const auto f = c0.find("finish_reason"); f != c0.end() && f->is_string())
      reason = f->get_ref<const std::string&>() == "length" ? tc::finish_reason::length
                                                            : tc::finish_reason::stop;
  }
  // The usage counts (OpenAI's usage object; vLLM sends prompt_tokens_details when prefix
  // caching statistics are enabled, and with continuous usage statistics a usage object in
  // every event, counting the tokens so far). Each is checked before anything is recorded.
  struct counts {
    std::optional<std::uint64_t> prompt, completion, cached, reasoning;
  } n;
  bool has_usage = false;
  if (const auto u = j.find("usage"); u != j.end() && !u->is_null()) {
    if (!u->is_object()) return fail(failure_kind::usage, where + ": usage is not an object");
    has_usage = true;
    std::string bad;
    // A count: absent or null is none; otherwise an integer in [0, 2^64 - 1] (nlohmann-json
    // reads a non-negative integer as unsigned, a negative one as signed, 2^64 and more, or a
    // fraction, as a float).
    const auto count = [&](const nlohmann::json& obj, const char* name, const std::string& path,
                           std::optional<std::uint64_t>& out) {
      const auto x = obj.find(name);
      if (!bad.empty() || x == obj.end() || x->is_null()) return;
      if (x->is_number_unsigned())
        out = x->get<std::uint64_t>();
      else
        bad = where + ": " + path + " is " + x->dump().substr(0, 40) +
              ", not a count (an integer in [0, 2^64 - 1])";
    };
    const auto detail = [&](const char* object, const char* name,
                            std::optional<std::uint64_t>& out) {
      const auto d = u->find(object);
      if (!bad.empty() || d == u->end() || d->is_null()) return;
      if (!d->is_object()) {
        bad = where + ": usage." + object + " is not an object";
        return;
      }
      count(*d, name, "usage." + std::string(object) + "." + name, out);
    };
    count(*u, "prompt_tokens", "usage.prompt_tokens", n.prompt);
    count(*u, "completion_tokens", "usage.completion_tokens", n.completion);
    detail("prompt_tokens_details", "cached_tokens", n.cached);
    detail("completion_tokens_details", "reasoning_tokens", n.reasoning);
    if (!bad.empty()) return fail(failure_kind::usage, bad);
  }
  const std::uint64_t token_chunks =
      token_chunks_ + (has_reasoning ? 1 : 0) + (has_choice && has_text ? 1 : 0);
  if (has_usage) {
    // Counts that cannot be, with those of earlier events: the trace would be refused, and a
    // report would count tokens the server never sent.
    const auto prompt = n.prompt ? n.prompt : tl_->prompt_tokens();
    const auto cached = n.cached ? n.cached : tl_->cached_prompt_tokens();
    const auto completion = n.completion ? n.completion : tl_->reported_output_tokens();
    const auto reasoning = n.reasoning ? n.reasoning : tl_->reported_reasoning_tokens();
    if (prompt && cached && *cached > *prompt)
      return fail(failure_kind::usage, where + ": usage.prompt_tokens_details.cached_tokens (" +
                                           std::to_string(*cached) +
                                           ") is greater than usage.prompt_tokens (" +
                                           std::to_string(*prompt) + ")");
    if (completion && reasoning && *reasoning > *completion)
      return fail(failure_kind::usage,
                  where + ": usage.completion_tokens_details.reasoning_tokens (" +
                      std::to_string(*reasoning) + ") is greater than usage.completion_tokens (" +
                      std::to_string(*completion) + ")");
    if (n.completion && *n.completion < token_chunks)
      return fail(failure_kind::usage, where + ": usage.completion_tokens (" +
                                           std::to_string(*n.completion) + ") is fewer than the " +
                                           std::to_string(token_chunks) +
                                           " chunks with tokens received");
  }
  if (!has_choice && !has_usage)
    return fail(failure_kind::sse_event, where + " has neither choices nor usage");
  if (n.prompt) tl_->set_prompt_tokens(*n.prompt);
  if (n.completion)
    tl_->set_reported_output_tokens(*n.completion, has_choice ? tc::usage_source::content_chunk
                                                              : tc::usage_source::usage_chunk);
  if (n.cached) tl_->set_cached_prompt_tokens(*n.cached);
  if (n.reasoning) tl_->set_reported_reasoning_tokens(*n.reasoning);
  if (reason) reason_ = *reason;
  token_chunks_ = token_chunks;
  if (has_choice) {
    // One event with both (the delta where the thinking ends) gives two chunks at its time.
    if (has_reasoning) (void)tl_->chunk(t, 1, tc::chunk_kind::reasoning);
    if (has_text || !has_reasoning)
      (void)tl_->chunk(t, has_text ? 1 : 0,
                       has_text ? tc::chunk_kind::text : tc::chunk_kind::empty);
  } else {
    (void)tl_->chunk(t, 0, tc::chunk_kind::usage);
  }
  return true;
}

}  // namespace tokchron_bench
