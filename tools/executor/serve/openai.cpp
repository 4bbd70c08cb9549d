// SPDX-License-Identifier: MIT
#include "openai.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <exception>
#include <limits>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

namespace batching::serve {

namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

std::uint64_t fnv1a(std::uint64_t h, std::string_view s) noexcept {
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}
constexpr std::uint64_t fnv_basis = 14695981039346656037ull;

std::uint64_t splitmix(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Whitespace-separated words of `s` (the server's stand-in for a tokenizer).
std::uint64_t count_words(std::string_view s) noexcept {
  std::uint64_t n = 0;
  bool in = false;
  for (const char c : s) {
    const bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
    if (!space && !in) ++n;
    in = !space;
  }
  return n;
}

/// The largest token id a prompt may hold (token ids are 32-bit).
constexpr std::uint64_t max_token_id = 0xffffffffU;

api_error bad(std::string message, std::string param = {}, std::string code = "invalid_value") {
  api_error e;
  e.message = std::move(message);
  e.param = std::move(param);
  e.code = std::move(code);
  return e;
}

// A message's content: a string, null, or an array of {"type":"text","text":...} parts.
bool content_text(const json& c, std::string& out) {
  if (c.is_null()) return true;
  if (c.is_string()) {
    out += c.get_ref<const std::string&>();
    return true;
  }
  if (!c.is_array()) return false;
  for (const json& part : c) {
    if (!part.is_object()) return false;
    const auto t = part.find("type");
    const auto x = part.find("text");
    if (t == part.end() || !t->is_string() || *t != "text" || x == part.end() || !x->is_string())
      return false;
    out += ' ';
    out += x->get_ref<const std::string&>();
  }
  return true;
}

std::variant<generation_request, api_error> parse(endpoint kind, std::string_view body,
                                                  const request_limits& lim) {
  const json j = json::parse(body.begin(), body.end(), nullptr, false);
  if (j.is_discarded()) return bad("the request body is not valid JSON", {}, "invalid_json");
  if (!j.is_object()) return bad("the request body must be a JSON object", {}, "invalid_json");
  generation_request g;
  g.kind = kind;

  const auto model = j.find("model");
  if (model == j.end()) return bad("'model' is required", "model", "missing_field");
  if (!model->is_string()) return bad("'model' must be a string", "model");
  if (model->get_ref<const std::string&>() != lim.model) {
    api_error e = bad("The model '" + model->get<std::string>() + "' does not exist.", "model",
                      "model_not_found");
    e.status = 404;
    return e;
  }

  // The prompt: its word count (or token ids) and its hash, which picks the answer's words.
  std::uint64_t words_in = 0;
  std::uint64_t seed = fnv_basis;
  if (kind == endpoint::completions) {
    const auto p = j.find("prompt");
    if (p == j.end()) return bad("'prompt' is required", "prompt", "missing_field");
    if (p->is_string()) {
      words_in = count_words(p->get_ref<const std::string&>());
      seed = fnv1a(seed, p->get_ref<const std::string&>());
    } else if (p->is_array() && p->size() == 1 && p->front().is_string()) {
      words_in = count_words(p->front().get_ref<const std::string&>());
      seed = fnv1a(seed, p->front().get_ref<const std::string&>());
    } else if (p->is_array() && !p->empty() && p->front().is_number_integer()) {
      // Token ids are 32-bit in every tokenizer an OpenAI-compatible server loads (vLLM keeps
      // them as int32): each must be an integer in [0, 2^32); the refusal names the element
      // and the real reason (wrong type, negative, or too large), read without wrapping.
      for (std::size_t i = 0; i < p->size(); ++i) {
        const json& t = (*p)[i];
        const std::string where = "'prompt[" + std::to_string(i) + "]'";
        if (!t.is_number_integer())
          return bad(where + " must be an integer token id, got " + t.dump(), "prompt");
        if (!t.is_number_unsigned() && t.get<std::int64_t>() < 0)
          return bad(where + " is a negative token id (" + t.dump() + ")", "prompt");
        if (t.get<std::uint64_t>() > max_token_id)
          return bad(where + " token id " + t.dump() + " is out of range (0 to " +
                         std::to_string(max_token_id) + ")",
                     "prompt");
        seed = splitmix(seed ^ t.get<std::uint64_t>());
      }
      words_in = p->size();
    } else {
      return bad("'prompt' must be a string, an array of one string or an array of token ids",
                 "prompt");
    }
  } else {
    const auto m = j.find("messages");
    if (m == j.end()) return bad("'messages' is required", "messages", "missing_field");
    if (!m->is_array() || m->empty())
      return bad("'messages' must be a non-empty array", "messages");
    std::string all;
    for (const json& msg : *m) {
      if (!msg.is_object()) return bad("each message must be an object", "messages");
      const auto role = msg.find("role");
      if (role == msg.end() || !role->is_string())
        return bad("each message needs a string 'role'", "messages");
      const auto c = msg.find("content");
      std::string text;
      if (c != msg.end() && !content_text(*c, text))
        return bad("a message's 'content' must be a string or an array of text parts", "messages");
      all += role->get_ref<const std::string&>();
      all += '\n';
      all += text;
      all += '\n';
      words_in += count_words(text);
    }
    seed = fnv1a(seed, all);
  }
  if (words_in == 0) words_in = 1;  // the template's own tokens: never an empty prompt
  if (words_in >= lim.max_model_len)
    return bad("This model's maximum context length is " + std::to_string(lim.max_model_len) +
                   " tokens. However, your prompt has " + std::to_string(words_in) +
                   " tokens, which leaves none for the completion.",
               kind == endpoint::chat ? "messages" : "prompt");
  if (words_in > lim.max_prompt_tokens)
    return bad("the prompt has " + std::to_string(words_in) +
                   " tokens, more than the engine's token budget of " +
                   std::to_string(lim.max_prompt_tokens) + " (chunked prefill is off)",
               kind == endpoint::chat ? "messages" : "prompt");
  g.prompt_tokens = static_cast<std::uint32_t>(words_in);
  g.seed = seed;

  auto flag = [&](const char* name, bool& out) -> std::optional<api_error> {
    const auto f = j.find(name);
    if (f == j.end() || f->is_null()) return std::nullopt;
    if (!f->is_boolean()) return bad(std::string("'") + name + "' must be a boolean", name);
    out = f->get<bool>();
    return std::nullopt;
  };
  if (auto e = flag("stream", g.stream)) return *e;
  if (auto e = flag("ignore_eos", g.ignore_eos)) return *e;

  const auto so = j.find("stream_options");
  if (so != j.end() && !so->is_null()) {
    if (!so->is_object()) return bad("'stream_options' must be an object", "stream_options");
    if (!g.stream)
      return bad("'stream_options' can only be given when 'stream' is true", "stream_options");
    const auto iu = so->find("include_usage");
    if (iu != so->end() && !iu->is_null()) {
      if (!iu->is_boolean())
        return bad("'stream_options.include_usage' must be a boolean", "stream_options");
      g.include_usage = iu->get<bool>();
    }
  }
  const auto n = j.find("n");
  if (n != j.end() && !n->is_null() && !(n->is_number_integer() && n->get<std::int64_t>() == 1))
    return bad("only 'n' = 1 is supported", "n");

  // max_tokens (chat also takes max_completion_tokens, which wins, as in the OpenAI API).
  const std::uint32_t room = lim.max_model_len - g.prompt_tokens;
  g.max_tokens = room;
  for (const char* name : {"max_tokens", "max_completion_tokens"}) {
    if (kind == endpoint::completions && std::string_view(name) == "max_completion_tokens")
      continue;
    const auto mt = j.find(name);
    if (mt == j.end() || mt->is_null()) continue;
    if (!mt->is_number_integer())
      return bad(std::string("'") + name + "' must be an integer", name);
    if (mt->is_number_unsigned() ? mt->get<std::uint64_t>() < 1 : mt->get<std::int64_t>() < 1)
      return bad(std::string("'") + name + "' must be at least 1, got " + mt->dump(), name);
    const std::uint64_t v = mt->is_number_unsigned()
                                ? mt->get<std::uint64_t>()
                                : static_cast<std::uint64_t>(mt->get<std::int64_t>());
    if (v > room)
      return bad("This model's maximum context length is " + std::to_string(lim.max_model_len) +
                     " tokens. However, you requested " + std::to_string(v + g.prompt_tokens) +
                     " tokens (" + std::to_string(g.prompt_tokens) + " in the prompt, " +
                     std::to_string(v) + " in the completion).",
                 name);
    g.max_tokens = static_cast<std::uint32_t>(v);
  }

  const std::uint32_t natural = natural_length(g.seed, lim.eos_range);
  g.stops = !g.ignore_eos && natural <= g.max_tokens;
  g.output_tokens = g.stops ? natural : g.max_tokens;
  if (kind == endpoint::chat)  // vLLM's reasoning parsers serve chat only
    g.reasoning_tokens = static_cast<std::uint32_t>(
        std::min<double>(g.output_tokens, std::round(lim.reasoning_fraction * g.output_tokens)));
  g.prefix_tokens = std::min(lim.shared_prefix, g.prompt_tokens);
  return g;
}

constexpr std::array<std::string_view, 64> vocabulary = {
    "the",    "a",      "token",   "stream",  "engine",  "batch",  "step",   "queue",
    "time",   "first",  "next",    "model",   "cache",   "block",  "prompt", "output",
    "server", "client", "latency", "rate",    "load",    "chunk",  "event",  "clock",
    "of",     "and",    "to",      "in",      "is",      "for",    "on",     "with",
    "every",  "one",    "two",     "three",   "four",    "five",   "six",    "seven",
    "fast",   "slow",   "early",   "late",    "short",   "long",   "high",   "low",
    "runs",   "waits",  "sends",   "reads",   "writes",  "counts", "holds",  "keeps",
    "kernel", "memory", "decode",  "prefill", "request", "answer", "word",   "end"};

ojson head_json(const response_head& h, const char* object) {
  ojson j = ojson::object();
  j["id"] = h.id;
  j["object"] = object;
  j["created"] = h.created;
  j["model"] = h.model;
  return j;
}
const char* chunk_object(endpoint k) {
  return k == endpoint::chat ? "chat.completion.chunk" : "text_completion";
}
ojson usage_json(const usage_counts& n) {
  ojson u = ojson::object();
  u["prompt_tokens"] = n.prompt;
  u["completion_tokens"] = n.completion;
  u["total_tokens"] = std::uint64_t(n.prompt) + n.completion;
  // vLLM adds the details only with --enable-prompt-tokens-details and a cache hit.
  if (n.cached && *n.cached > 0) u["prompt_tokens_details"] = ojson{{"cached_tokens", *n.cached}};
  if (n.reasoning) u["completion_tokens_details"] = ojson{{"reasoning_tokens", *n.reasoning}};
  return u;
}
ojson finish_json(std::string_view f) { return f.empty() ? ojson(nullptr) : ojson(f); }

}  // namespace

std::string error_json(const api_error& e) {
  ojson err = ojson::object();
  err["message"] = e.message;
  err["type"] = e.type;
  err["param"] = e.param.empty() ? ojson(nullptr) : ojson(e.param);
  err["code"] = e.code.empty() ? ojson(nullptr) : ojson(e.code);
  ojson j = ojson::object();
  j["error"] = std::move(err);
  // Invalid UTF-8 echoed from a request (an unknown model's name) is replaced, never thrown.
  return j.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

std::variant<generation_request, api_error> parse_request(endpoint kind, std::string_view body,
                                                          const request_limits& limits) noexcept {
  try {
    return parse(kind, body, limits);
  } catch (const std::exception& e) {  // out of memory building the document, say
    api_error err = bad(std::string("the request could not be read: ") + e.what(), {}, {});
    return err;
  }
}

std::uint32_t natural_length(std::uint64_t seed, std::uint32_t eos_range) noexcept {
  return 1 + static_cast<std::uint32_t>(splitmix(seed) % (eos_range ? eos_range : 1));
}

std::string words(std::uint64_t seed, std::uint32_t first, std::uint32_t n) {
  std::string s;
  for (std::uint32_t i = 0; i < n; ++i) {
    s += ' ';
    s += vocabulary[splitmix(seed ^ (std::uint64_t(first) + i) * 0x9e3779b97f4a7c15ull) %
                    vocabulary.size()];
  }
  return s;
}

std::string_view finish_reason_text(tokchron::finish_reason r) noexcept {
  switch (r) {
    case tokchron::finish_reason::stop: return "stop";
    case tokchron::finish_reason::length: return "length";
    default: return "abort";
  }
}

std::string role_chunk(const response_head& h) {
  ojson j = head_json(h, chunk_object(h.kind));
  ojson c = ojson::object();
  c["index"] = 0;
  c["delta"] = ojson{{"role", "assistant"}, {"content", ""}};
  c["logprobs"] = nullptr;
  c["finish_reason"] = nullptr;
  j["choices"] = ojson::array({std::move(c)});
  return j.dump();
}

std::string content_chunk(const response_head& h, const std::string& text, std::string_view finish,
                          const std::string& reasoning) {
  ojson j = head_json(h, chunk_object(h.kind));
  ojson c = ojson::object();
  c["index"] = 0;
  if (h.kind == endpoint::chat) {
    // vLLM's DeltaMessage field order: content, reasoning, reasoning_content (a deprecated copy
    // its validator sets).
    ojson d = ojson::object();
    if (!text.empty() || reasoning.empty()) d["content"] = text;
    if (!reasoning.empty()) {
      d["reasoning"] = reasoning;
      d["reasoning_content"] = reasoning;
    }
    c["delta"] = std::move(d);
  } else
    c["text"] = text;
  c["logprobs"] = nullptr;
  c["finish_reason"] = finish_json(finish);
  j["choices"] = ojson::array({std::move(c)});
  return j.dump();
}

std::string usage_chunk(const response_head& h, const usage_counts& u) {
  ojson j = head_json(h, chunk_object(h.kind));
  j["choices"] = ojson::array();
  j["usage"] = usage_json(u);
  return j.dump();
}

std::string full_response(const response_head& h, const std::string& text, std::string_view finish,
                          const usage_counts& u, const std::string& reasoning) {
  ojson j = head_json(h, h.kind == endpoint::chat ? "chat.completion" : "text_completion");
  ojson c = ojson::object();
  c["index"] = 0;
  if (h.kind == endpoint::chat) {
    ojson m = ojson{{"role", "assistant"}, {"content", text}};
    if (!reasoning.empty()) {
      m["reasoning"] = reasoning;
      m["reasoning_content"] = reasoning;
    }
    c["message"] = std::move(m);
  } else {
    c["text"] = text;
  }
  c["logprobs"] = nullptr;
  c["finish_reason"] = finish_json(finish);
  j["choices"] = ojson::array({std::move(c)});
  j["usage"] = usage_json(u);
  return j.dump();
}

std::string models_json(const std::string& model, std::int64_t created,
                        std::uint32_t max_model_len) {
  ojson m = ojson::object();
  m["id"] = model;
  m["object"] = "model";
  m["created"] = created;
  m["owned_by"] = "tokchron";
  m["max_model_len"] = max_model_len;
  ojson j = ojson::object();
  j["object"] = "list";
  j["data"] = ojson::array({std::move(m)});
  return j.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

}  // namespace batching::serve
