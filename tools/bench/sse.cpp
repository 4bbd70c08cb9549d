// SPDX-License-Identifier: MIT
// tokchron-requires: nlohmann-json
#include "sse.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

namespace tokchron_bench {

const char* failure_name(failure_kind k) noexcept {
  switch (k) {
    case failure_kind::none: return "none";
    case failure_kind::connect: return "connect";
    case failure_kind::tls: return "tls";
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
    case failure_kind::server_finish: return "server_finish";
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

// The length of the valid UTF-8 sequence at the start of `s` (1 to 4), or 0 when its first
// byte does not begin one (a lone continuation byte, an overlong form, a surrogate, a code
// point past U+10FFFF, a sequence cut short).
std::size_t utf8_sequence(std::string_view s) noexcept {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the second byte's range
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;  // overlong
    if (c == 0xed) hi = 0x9f;  // surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;  // overlong
    if (c == 0xf4) hi = 0x8f;  // past U+10FFFF
  } else {
    return 0;
  }
  if (s.size() < n || b(1) < lo || b(1) > hi) return 0;
  for (std::size_t i = 2; i < n; ++i)
    if (b(i) < 0x80 || b(i) > 0xbf) return 0;
  return n;
}
}  // namespace

std::string quote_bytes(std::string_view bytes, std::size_t max_bytes) {
  if (max_bytes < 3) max_bytes = 3;
  std::string out;
  std::size_t keep = 0;  // the longest prefix of `out` that leaves room for "..."
  bool fits = true;
  for (std::size_t i = 0; i < bytes.size();) {
    char piece[8];
    std::size_t len = 0;
    const auto c = static_cast<unsigned char>(bytes[i]);
    const std::size_t n = utf8_sequence(bytes.substr(i));
    if (n == 1 && (c < 0x20 || c == 0x7f)) {
      len =
          static_cast<std::size_t>(c == '\n'   ? std::snprintf(piece, sizeof piece, "\\n")
                                   : c == '\r' ? std::snprintf(piece, sizeof piece, "\\r")
                                   : c == '\t' ? std::snprintf(piece, sizeof piece, "\\t")
                                               : std::snprintf(piece, sizeof piece, "\\x%02x", c));
    } else if (n == 0) {
      len = 3;  // U+FFFD
      std::memcpy(piece, "\xef\xbf\xbd", 3);
    } else {
      len = n;
      std::memcpy(piece, bytes.data() + i, n);
    }
    i += n == 0 ? 1 : n;
    if (out.size() + len > max_bytes) {
      fits = false;
      break;
    }
    out.append(piece, len);
    if (out.size() <= max_bytes - 3) keep = out.size();
  }
  if (fits) return out;
  out.resize(keep);
  return out + "...";
}

server_finish classify_finish_reason(std::string_view w) noexcept {
  server_finish f;
  if (w == "length") {
    f.reason = tc::finish_reason::length;
  } else if (w == "abort" || w == "aborted" || w == "cancelled" || w == "canceled") {
    f = {tc::finish_reason::aborted, false, true};
  } else if (w == "error") {
    f = {tc::finish_reason::error, false, true};
  } else if (w == "timeout") {
    f = {tc::finish_reason::timed_out, false, true};
  } else {
    f.known = w == "stop" || w == "tool_calls" || w == "function_call" || w == "content_filter" ||
              w == "eos_token" || w == "stop_sequence" || w == "repetition";
  }
  return f;
}

bool sse_decoder::fail(failure_kind k, std::string why) {
  if (error_.empty()) {
    error_ = std::move(why);
    kind_ = k;
  }
  return false;
}

std::string sse_decoder::unfinished() const {
  if (has_data_) return ", inside an event (a data line without the blank line that ends it)";
  if (!line_.empty() || (bom_seen_ > 0 && bom_seen_ < 3)) return ", inside a line";
  return std::string();
}

tc::record_status sse_decoder::finish_timeline() { return tl_->finish(done_time_, finish_.reason); }

bool sse_decoder::feed(std::string_view bytes, clock::time_point t, std::uint64_t read) {
  if (failed()) return false;
  // A byte order mark at the very start is skipped, also when it comes split; bytes that
  // begin like one and then differ are the stream's own.
  static constexpr char bom[] = "\xef\xbb\xbf";
  while (bom_seen_ < 3 && !bytes.empty()) {
    if (bytes.front() != bom[bom_seen_]) {
      const std::size_t held = bom_seen_;
      bom_seen_ = 3;
      if (held > 0 && !feed(std::string_view(bom, held), t, read)) return false;
      break;
    }
    bytes.remove_prefix(1);
    ++bom_seen_;
  }
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
    const bool ok = line(l, t, read);
    line_.clear();
    if (!ok) return false;
  }
  return true;
}

// One line of the stream (SSE: "field: value", ":" comment, blank = end of event). A line
// without a colon is a field with an empty value in the SSE grammar, but no OpenAI-compatible
// server sends one: it is taken as a broken stream (the line is named in the reason).
bool sse_decoder::line(std::string_view l, clock::time_point t, std::uint64_t read) {
  ++lines_;
  if (l.empty()) return event();
  if (l.front() == ':') return true;
  const auto colon = l.find(':');
  if (colon == std::string_view::npos)
    return fail(failure_kind::sse_line, "SSE line " + std::to_string(lines_) +
                                            " is not a field: '" + quote_bytes(l, 80) + "'");
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
  data_time_ = t;
  data_read_ = read;
  return true;
}

void sse_decoder::record(clock::time_point t, std::uint32_t tokens, tc::chunk_kind kind) {
  (void)tl_->chunk(t, tokens, kind);
}

bool sse_decoder::event() {
  if (!has_data_) return true;
  has_data_ = false;
  const std::string data = std::move(data_);
  data_.clear();
  ++events_;
  const clock::time_point t = data_time_;
  const std::string where = "SSE event " + std::to_string(events_);
  if (done_) return fail(failure_kind::sse_line, where + " comes after [DONE]");
  if (events_ > max_stream_events)
    return fail(failure_kind::sse_too_long,
                "more than " + std::to_string(max_stream_events) + " SSE events without [DONE]");
  // Which events shared their read with another (counted once the event is taken).
  const auto count_read = [&] {
    ++content_.events;
    if (content_.events > 1 && data_read_ == last_read_) {
      content_.shared_read += ++last_read_events_ == 2 ? 2 : 1;
    } else {
      last_read_ = data_read_;
      last_read_events_ = 1;
    }
  };
  if (data == "[DONE]") {
    done_ = true;
    done_time_ = t;
    count_read();
    content_.last_token_with_done = any_token_ && last_token_read_ == data_read_;
    record(t, 0, tc::chunk_kind::done);
    return true;
  }
  const auto j = nlohmann::json::parse(data, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return fail(failure_kind::sse_json,
                where + " is not a JSON object: '" + quote_bytes(data, 80) + "'");
  // An error object (or any value but null and false: `"error": null` beside the choices is
  // how some servers say there is none).
  if (const auto e = j.find("error");
      e != j.end() && !e->is_null() && !(e->is_boolean() && !e->get<bool>())) {
    std::string msg = e->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (e->is_object() && e->contains("message") && (*e)["message"].is_string())
      msg = (*e)["message"].get<std::string>();
    else if (e->is_string())
      msg = e->get<std::string>();
    return fail(failure_kind::server_error, "server error in the stream: " + quote_bytes(msg, 200));
  }
  // What a choice carries: text (content for chat, text for completions), reasoning text,
  // tool-call deltas. `bad`: a text field of another type than string (null aside).
  struct carried {
    bool text = false, reasoning = false, tool_calls = false;
  };
  const auto nonempty = [](const nlohmann::json& obj, const char* field, bool& bad) {
    const auto x = obj.find(field);
    if (x == obj.end() || x->is_null()) return false;
    if (!x->is_string()) bad = true;
    return x->is_string() && !x->get_ref<const std::string&>().empty();
  };
  // The measured choice's text, for `keep_text`: each choice's as `carries` reads it.
  const std::string* mine_text = nullptr;
  const std::string* text_of = nullptr;
  const auto carries = [&](const nlohmann::json& choice, bool& bad) {
    carried c;
    if (endpoint_ == endpoint_kind::chat) {
      // Reasoning models' thinking comes in its own delta field: `reasoning_content` (vLLM's
      // DeltaMessage, vllm/entrypoints/openai/protocol.py at
      // 0052bed36509c7a5a2d8e48265334e40cf2f5a0e; SGLang, DeepSeek) or `reasoning` (later vLLM
      // versions). Tool calls come as `tool_calls` deltas (OpenAI's ChatCompletionChunk), or the
      // older `function_call`.
      if (const auto d = choice.find("delta"); d != choice.end() && d->is_object()) {
        c.text = nonempty(*d, "content", bad);
        if (c.text) text_of = &d->find("content")->get_ref<const std::string&>();
        c.reasoning = nonempty(*d, "reasoning_content", bad) || nonempty(*d, "reasoning", bad);
        const auto tc_ = d->find("tool_calls");
        const auto fc = d->find("function_call");
        c.tool_calls = (tc_ != d->end() && tc_->is_array() && !tc_->empty()) ||
                       (fc != d->end() && fc->is_object() && !fc->empty());
      }
    } else {
      c.text = nonempty(choice, "text", bad);
      if (c.text) text_of = &choice.find("text")->get_ref<const std::string&>();
    }
    return c;
  };
  bool has_choice = false;
  carried mine, others;
  std::optional<server_finish> said;
  std::string word;
  if (const auto c = j.find("choices"); c != j.end() && c->is_array() && !c->empty()) {
    has_choice = true;
    // The measured choice: the first with index 0, or the first when none has an index.
    const nlohmann::json* measured = nullptr;
    bool indexed = false;
    for (std::size_t i = 0; i < c->size(); ++i) {
      const auto& ch = (*c)[i];
      if (!ch.is_object())
        return fail(failure_kind::sse_event,
                    where + ": choices[" + std::to_string(i) + "] is not an object");
      const auto ix = ch.find("index");
      if (ix != ch.end() && ix->is_number_integer()) {
        indexed = true;
        if (!measured && ix->is_number_unsigned() && ix->get<std::uint64_t>() == 0) measured = &ch;
      }
    }
    if (!indexed) measured = &c->front();
    bool bad = false;
    for (const auto& ch : *c) {
      bool ignored = false;
      if (&ch == measured) {
        text_of = nullptr;
        mine = carries(ch, bad);
        mine_text = text_of;
      } else {
        const carried o = carries(ch, ignored);
        others.text = others.text || o.text || o.reasoning || o.tool_calls;
      }
    }
    if (bad) return fail(failure_kind::sse_event, where + ": the choice's text is not a string");
    if (measured)
      if (const auto f = measured->find("finish_reason"); f != measured->end() && f->is_string()) {
        word = f->get<std::string>();
        said = classify_finish_reason(word);
      }
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
        bad = where + ": " + path + " is " +
              quote_bytes(x->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), 40) +
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
      token_chunks_ + (mine.reasoning ? 1 : 0) + (has_choice && mine.text ? 1 : 0);
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
  // The event is taken: from here nothing fails.
  if (n.prompt) tl_->set_prompt_tokens(*n.prompt);
  if (n.completion)
    tl_->set_reported_output_tokens(*n.completion, has_choice ? tc::usage_source::content_chunk
                                                              : tc::usage_source::usage_chunk);
  if (n.cached) tl_->set_cached_prompt_tokens(*n.cached);
  if (n.reasoning) tl_->set_reported_reasoning_tokens(*n.reasoning);
  if (said) {
    finish_word_ = quote_bytes(word, 40);
    // The first failure the server states stands (a later stop does not undo it).
    if (finish_.completed) finish_ = *said;
    if (!said->completed && server_failure_.empty())
      server_failure_ =
          where + ": the server ended the request with finish_reason '" + finish_word_ + "'";
  }
  token_chunks_ = token_chunks;
  count_read();
  if (kept_ && mine.text && mine_text && !kept_full_) {
    if (kept_->size() + mine_text->size() <= keep_most_) {
      kept_->append(*mine_text);
    } else {
      kept_full_ = true;
      if (kept_cut_) *kept_cut_ = true;
    }
  }
  if (has_choice) {
    if (mine.text) ++content_.text;
    if (mine.reasoning) ++content_.reasoning;
    if (!mine.text && !mine.reasoning) {
      if (mine.tool_calls)
        ++content_.tool_calls;
      else if (others.text)
        ++content_.other_choice;
      else
        ++content_.empty;
    }
    // Token gaps: a gap whose two chunks came in one read is one the client could not
    // measure (two chunks of one event, reasoning then text, are the server's own).
    const auto token = [&](bool first_of_event) {
      if (any_token_) {
        ++content_.token_gaps;
        if (first_of_event && last_token_read_ == data_read_) ++content_.token_gaps_in_one_read;
      }
      any_token_ = true;
      last_token_read_ = data_read_;
    };
    // One event with both (the delta where the thinking ends) gives two chunks at its time.
    if (mine.reasoning) {
      token(true);
      record(t, 1, tc::chunk_kind::reasoning);
    }
    if (mine.text) token(!mine.reasoning);
    if (mine.text || !mine.reasoning)
      record(t, mine.text ? 1 : 0, mine.text ? tc::chunk_kind::text : tc::chunk_kind::empty);
  } else {
    ++content_.usage_only;
    record(t, 0, tc::chunk_kind::usage);
  }
  return true;
}

}  // namespace tokchron_bench
