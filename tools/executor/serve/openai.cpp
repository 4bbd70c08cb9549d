// SPDX-License-Identifier: MIT
#include "openai.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <exception>
#include <iterator>
#include <limits>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "kv_cache.hpp"

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

// The prompt's tokens as the server counts them (its stand-in for a tokenizer: one token a
// whitespace-separated word, or a token id), and, when prefix caching is on, the chain hashes
// of their full KV blocks (the prefix cache's keys, kv_cache.hpp). A token's key is its word's
// bytes, hashed with `seed` (in a chat, its message's role and index: the same words in another
// role or message are other tokens, as a chat template's markers make them), or its id; the
// first `shared` tokens are the shared system prompt's (`--shared-prefix`) whatever they say.
class prompt_tokens {
 public:
  prompt_tokens(const request_limits& lim, std::vector<std::uint64_t>& hashes)
      : shared_(lim.shared_prefix), hashing_(lim.block_size > 0) {
    if (hashing_) hasher_.emplace(lim.block_size, hashes);
  }
  // Counts (and hashes) the whitespace-separated words of `s`.
  void words(std::string_view s, std::uint64_t seed) {
    std::size_t begin = 0;
    bool in = false;
    for (std::size_t i = 0; i <= s.size(); ++i) {
      const char c = i < s.size() ? s[i] : ' ';
      const bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
      if (!space && !in) begin = i;
      if (space && in) add(fnv1a(seed, s.substr(begin, i - begin)));
      in = !space;
    }
  }
  void token_id(std::uint64_t id) { add(block_hasher::token_id_key(id)); }
  [[nodiscard]] std::uint64_t count() const noexcept { return n_; }

 private:
  void add(std::uint64_t key) {
    if (hashing_) hasher_->add(n_ < shared_ ? block_hasher::shared_prefix_key(n_) : key);
    ++n_;
  }
  std::uint64_t n_ = 0, shared_;
  bool hashing_;
  std::optional<block_hasher> hasher_;
};

/// The largest token id a prompt may hold (token ids are 32-bit).
constexpr std::uint64_t max_token_id = 0xffffffffU;

api_error bad(std::string message, std::string param = {}, std::string code = "invalid_value") {
  api_error e;
  e.message = std::move(message);
  e.param = std::move(param);
  e.code = std::move(code);
  return e;
}

// How many of the first bytes of `s` a refusal echoes: at most `max`, cut at a UTF-8 character
// boundary (before a byte that is not a continuation byte), so that an error's size never grows
// with the request (invalid bytes are replaced by error_json).
std::size_t echo_length(std::string_view s, std::size_t max) noexcept {
  if (s.size() <= max) return s.size();
  std::size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return n;
}
// `s`, or its first bytes and "..." (echo_length).
std::string prefix(std::string_view s, std::size_t max) {
  const std::size_t n = echo_length(s, max);
  return n == s.size() ? std::string(s) : std::string(s.substr(0, n)) + "...";
}

// A value as a refusal quotes it: its JSON type, and its text when it is a scalar (a string cut
// to its first 32 bytes). An array or object is described by its size, never printed: printing
// is recursive in nlohmann-json, and nothing here recurses on request data.
std::string shown(const json& v) {
  const auto plural = [](std::size_t n, const char* one, const char* many) {
    return std::to_string(n) + (n == 1 ? one : many);
  };
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return v.get<bool>() ? "a boolean (true)" : "a boolean (false)";
    case json::value_t::string: {
      const std::string& s = v.get_ref<const std::string&>();
      const std::size_t n = echo_length(s, 32);
      return "a string (" +
             json(s.substr(0, n)).dump(-1, ' ', false, json::error_handler_t::replace) +
             (n < s.size() ? "...)" : ")");
    }
    case json::value_t::array:
      return v.empty() ? "an empty array"
                       : "an array of " + plural(v.size(), " element", " elements");
    case json::value_t::object:
      return v.empty() ? "an empty object"
                       : "an object of " + plural(v.size(), " member", " members");
    default: return v.dump();  // a number: its own short text
  }
}

// The request's optional fields are checked by kind: each refusal names the field (its
// `param`, and in the message) and the real reason: the wrong JSON type, or out of range, with
// the value given. Ranges follow vLLM's SamplingParams._verify_args
// (vllm-project/vllm, vllm/sampling_params.py at commit
// 00388f6573ccfcffad607b8c9ecdf341a4669ceb) and its protocol (seed: a 64-bit integer).
struct field_check {
  const json& j;
  std::optional<api_error> error;

  // The field, or nullptr when absent or null (null is "not given", as in the OpenAI API).
  const json* get(const char* name) const {
    const auto f = j.find(name);
    return f == j.end() || f->is_null() ? nullptr : &*f;
  }
  void fail(const std::string& field, const std::string& why, const json& v) {
    if (!error) error = bad("'" + field + "' " + why + ", got " + shown(v), field);
  }
  void unsupported(const std::string& field, const std::string& why, const json& v) {
    if (!error)
      error = bad("'" + field + "' " + why + ", got " + shown(v), field, "unsupported_value");
  }

  // A boolean.
  std::optional<bool> boolean(const char* name) {
    const json* v = get(name);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) {
      fail(name, "must be a boolean", *v);
      return std::nullopt;
    }
    return v->get<bool>();
  }
  // A string.
  const json* string(const char* name) {
    const json* v = get(name);
    if (v && !v->is_string()) {
      fail(name, "must be a string", *v);
      return nullptr;
    }
    return v;
  }
  // An integer in [lo, hi]: JSON integers read exactly (signed or unsigned, never wrapped); a
  // number written with a fraction part or an exponent is taken when it is a whole number in
  // range (as vLLM's pydantic does), and refused as "must be an integer" when it is not whole.
  std::optional<std::int64_t> integer(const std::string& field, const json& v, std::int64_t lo,
                                      std::int64_t hi) {
    const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    if (!v.is_number()) {
      fail(field, "must be an integer in " + range, v);
      return std::nullopt;
    }
    if (v.is_number_float()) {
      const double d = v.get<double>();
      if (std::floor(d) != d) {
        fail(field, "must be an integer", v);
        return std::nullopt;
      }
      if (d < static_cast<double>(lo) || d > static_cast<double>(hi)) {
        fail(field,
             d < static_cast<double>(lo) ? "must be at least " + std::to_string(lo)
                                         : "must be at most " + std::to_string(hi),
             v);
        return std::nullopt;
      }
      return static_cast<std::int64_t>(d);
    }
    if (v.is_number_unsigned() ? v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi)
                               : v.get<std::int64_t>() > hi) {
      fail(field, "must be at most " + std::to_string(hi), v);
      return std::nullopt;
    }
    if (v.is_number_unsigned() ? lo > 0 && v.get<std::uint64_t>() < static_cast<std::uint64_t>(lo)
                               : v.get<std::int64_t>() < lo) {
      fail(field, "must be at least " + std::to_string(lo), v);
      return std::nullopt;
    }
    return v.get<std::int64_t>();
  }
  std::optional<std::int64_t> integer(const char* name, std::int64_t lo, std::int64_t hi) {
    const json* v = get(name);
    return v ? integer(name, *v, lo, hi) : std::nullopt;
  }
  // A number in the interval given (`open_lo`: lo itself excluded), e.g. (0, 1].
  std::optional<double> number(const std::string& field, const json& v, double lo, double hi,
                               bool open_lo, const char* range) {
    if (!v.is_number()) {
      fail(field, std::string("must be a number in ") + range, v);
      return std::nullopt;
    }
    const double d = v.get<double>();
    if (d < lo || d > hi || (open_lo && d == lo)) {
      fail(field, std::string("must be in ") + range, v);
      return std::nullopt;
    }
    return d;
  }
  std::optional<double> number(const char* name, double lo, double hi, bool open_lo,
                               const char* range) {
    const json* v = get(name);
    return v ? number(name, *v, lo, hi, open_lo, range) : std::nullopt;
  }
};

constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t int64_min = std::numeric_limits<std::int64_t>::min();

// The sampling and output fields both endpoints share, and those of one endpoint: checked by
// type and range. The server samples no probabilities, so the fields that ask for them, or for
// what it does not produce (`echo`, `suffix`, several choices), are refused as unsupported
// rather than silently ignored.
void check_sampling_fields(field_check& f, endpoint kind) {
  f.number("temperature", 0, 2, false, "[0, 2]");
  f.number("top_p", 0, 1, true, "(0, 1]");
  f.integer("top_k", -1, std::numeric_limits<std::int32_t>::max());
  f.number("min_p", 0, 1, false, "[0, 1]");
  f.number("presence_penalty", -2, 2, false, "[-2, 2]");
  f.number("frequency_penalty", -2, 2, false, "[-2, 2]");
  f.number("repetition_penalty", 0, std::numeric_limits<double>::max(), true, "(0, 1.8e308]");
  f.integer("seed", int64_min, int64_max);
  f.string("user");
  if (const auto n = f.integer("n", 1, int64_max); n && *n != 1)
    f.unsupported("n", "must be 1 (this server gives one choice)", *f.get("n"));
  if (const json* stop = f.get("stop")) {
    if (stop->is_string()) {
      if (stop->get_ref<const std::string&>().empty()) f.fail("stop", "must not be empty", *stop);
    } else if (stop->is_array()) {
      for (std::size_t i = 0; i < stop->size(); ++i) {
        const std::string at = "stop[" + std::to_string(i) + "]";
        const json& e = (*stop)[i];
        if (!e.is_string())
          f.fail(at, "must be a string", e);
        else if (e.get_ref<const std::string&>().empty())
          f.fail(at, "must not be empty", e);
      }
    } else {
      f.fail("stop", "must be a string or an array of strings", *stop);
    }
  }
  if (const json* ids = f.get("stop_token_ids")) {
    if (!ids->is_array())
      f.fail("stop_token_ids", "must be an array of token ids", *ids);
    else
      for (std::size_t i = 0; i < ids->size(); ++i)
        f.integer("stop_token_ids[" + std::to_string(i) + "]", (*ids)[i], 0, 0xffffffffLL);
  }
  if (const json* lb = f.get("logit_bias")) {
    if (!lb->is_object()) {
      f.fail("logit_bias", "must be an object of token id: bias", *lb);
    } else {
      for (const auto& [key, bias] : lb->items()) {
        const std::string at = "logit_bias[\"" + std::string(key) + "\"]";
        const bool digits =
            !key.empty() && key.size() <= 10 &&
            std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (!digits || std::stoull(key) > 0xffffffffULL)
          f.fail("logit_bias", "keys must be token ids (0 to 4294967295)", json(key));
        else
          f.number(at, bias, -100, 100, false, "[-100, 100]");
      }
    }
  }
  if (kind == endpoint::completions) {
    if (const auto lp = f.integer("logprobs", -1, int64_max))
      f.unsupported("logprobs", "is not supported (this server has no token probabilities)",
                    *f.get("logprobs"));
    if (const auto echo = f.boolean("echo"); echo && *echo)
      f.unsupported("echo", "is not supported (the prompt is not echoed)", *f.get("echo"));
    if (const json* sfx = f.string("suffix")) f.unsupported("suffix", "is not supported", *sfx);
    if (const auto b = f.integer("best_of", 1, int64_max); b && *b != 1)
      f.unsupported("best_of", "must be 1 (this server gives one choice)", *f.get("best_of"));
  } else {
    if (const auto lp = f.boolean("logprobs"); lp && *lp)
      f.unsupported("logprobs", "is not supported (this server has no token probabilities)",
                    *f.get("logprobs"));
    if (const auto top = f.integer("top_logprobs", 0, 20); top && *top > 0)
      f.unsupported("top_logprobs", "is not supported (this server has no token probabilities)",
                    *f.get("top_logprobs"));
  }
}

// The roles of chat messages (OpenAI's chat API; vLLM's chat templates take the same).
bool known_role(const std::string& r) {
  for (const char* k : {"system", "developer", "user", "assistant", "tool", "function"})
    if (r == k) return true;
  return false;
}

// messages[i]'s content: a string, null (assistant, tool calls), or an array of text parts;
// the refusal names the element (`messages[1].content[0].type`).
void content_text(field_check& f, const std::string& at, const json& c, std::string& out) {
  if (c.is_null()) return;
  if (c.is_string()) {
    out += c.get_ref<const std::string&>();
    return;
  }
  if (!c.is_array()) return f.fail(at, "must be a string or an array of content parts", c);
  for (std::size_t i = 0; i < c.size(); ++i) {
    const json& part = c[i];
    const std::string p = at + "[" + std::to_string(i) + "]";
    if (!part.is_object()) return f.fail(p, "must be an object", part);
    const auto t = part.find("type");
    if (t == part.end()) return f.fail(p + ".type", "is required", json(nullptr));
    if (!t->is_string()) return f.fail(p + ".type", "must be a string", *t);
    const std::string& type = t->get_ref<const std::string&>();
    if (type != "text") {
      static const char* const media[] = {"image_url", "input_audio", "file",
                                          "video_url", "audio_url",   "refusal"};
      const bool known =
          std::any_of(std::begin(media), std::end(media), [&](const char* m) { return type == m; });
      return known
                 ? f.unsupported(p + ".type", "is not supported (this server takes text only)", *t)
                 : f.fail(p + ".type", "must be \"text\"", *t);
    }
    const auto x = part.find("text");
    if (x == part.end()) return f.fail(p + ".text", "is required", json(nullptr));
    if (!x->is_string()) return f.fail(p + ".text", "must be a string", *x);
    out += ' ';
    out += x->get_ref<const std::string&>();
  }
}

// The offset of the first '[' or '{' that opens a level deeper than `max`, or npos. Brackets
// inside strings do not count: a string starts at a '"' outside one and ends at the next '"' not
// escaped by a '\\', which is exactly where JSON's strings end in a valid text (an invalid text
// is refused by the parser whatever this says).
std::size_t too_deep_at(std::string_view body, std::size_t max) noexcept {
  std::size_t depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string_view::npos;
}

std::variant<generation_request, api_error> parse(endpoint kind, std::string_view body,
                                                  const request_limits& lim) {
  // Nesting is bounded before anything is built: nlohmann-json's parser and destructor are
  // iterative, but its dump, copy and comparison recurse, so no document deeper than
  // max_json_depth is ever made.
  if (const std::size_t at = too_deep_at(body, max_json_depth); at != std::string_view::npos)
    return bad("the request body nests arrays and objects more than " +
                   std::to_string(max_json_depth) + " levels deep (at byte " + std::to_string(at) +
                   ")",
               {}, "invalid_json");
  json j;
  try {
    j = json::parse(body.begin(), body.end());
  } catch (const json::exception& e) {  // where and why: "parse error at line 1, column 9: ..."
    // (a number past double's range is nlohmann-json's out_of_range 406, the rest parse_error)
    // The parser quotes the token it read ("last read: ..."), which may be a whole long string:
    // the message keeps its first 256 bytes.
    std::string why = e.what();
    if (const auto at = why.find("] "); at != std::string::npos) why.erase(0, at + 2);
    return bad("the request body is not valid JSON: " + prefix(why, 256), {}, "invalid_json");
  }
  if (!j.is_object()) return bad("the request body must be a JSON object", {}, "invalid_json");
  generation_request g;
  g.kind = kind;

  const auto model = j.find("model");
  if (model == j.end()) return bad("'model' is required", "model", "missing_field");
  if (!model->is_string()) return bad("'model' must be a string, got " + shown(*model), "model");
  if (model->get_ref<const std::string&>() != lim.model) {
    api_error e =
        bad("The model '" + prefix(model->get_ref<const std::string&>(), 256) + "' does not exist.",
            "model", "model_not_found");
    e.status = 404;
    return e;
  }

  // The prompt: its word count (or token ids), its blocks' hashes, and its hash, which picks
  // the answer's words.
  prompt_tokens tokens(lim, g.block_hashes);
  std::uint64_t seed = fnv_basis;
  if (kind == endpoint::completions) {
    const auto p = j.find("prompt");
    if (p == j.end()) return bad("'prompt' is required", "prompt", "missing_field");
    if (p->is_string()) {
      tokens.words(p->get_ref<const std::string&>(), fnv_basis);
      seed = fnv1a(seed, p->get_ref<const std::string&>());
    } else if (p->is_array() && p->size() == 1 && p->front().is_string()) {
      tokens.words(p->front().get_ref<const std::string&>(), fnv_basis);
      seed = fnv1a(seed, p->front().get_ref<const std::string&>());
    } else if (p->is_array() && !p->empty() && p->front().is_number()) {
      // Token ids are 32-bit in every tokenizer an OpenAI-compatible server loads (vLLM keeps
      // them as int32): each must be an integer in [0, 2^32); the refusal names the element
      // and the real reason (wrong type, negative, or too large), read without wrapping.
      for (std::size_t i = 0; i < p->size(); ++i) {
        const json& t = (*p)[i];
        const std::string where = "'prompt[" + std::to_string(i) + "]'";
        if (!t.is_number_integer())
          return bad(where + " must be an integer token id, got " + shown(t), "prompt");
        if (!t.is_number_unsigned() && t.get<std::int64_t>() < 0)
          return bad(where + " is a negative token id (" + t.dump() + ")", "prompt");
        if (t.get<std::uint64_t>() > max_token_id)
          return bad(where + " token id " + t.dump() + " is out of range (0 to " +
                         std::to_string(max_token_id) + ")",
                     "prompt");
        seed = splitmix(seed ^ t.get<std::uint64_t>());
        tokens.token_id(t.get<std::uint64_t>());
      }
    } else {
      return bad(
          "'prompt' must be a string, an array of one string or a non-empty array of "
          "token ids, got " +
              shown(*p),
          "prompt");
    }
  } else {
    const auto m = j.find("messages");
    if (m == j.end()) return bad("'messages' is required", "messages", "missing_field");
    if (!m->is_array() || m->empty())
      return bad("'messages' must be a non-empty array, got " + shown(*m), "messages");
    std::string all;
    field_check f{j, std::nullopt};
    for (std::size_t i = 0; i < m->size(); ++i) {
      const json& msg = (*m)[i];
      const std::string at = "messages[" + std::to_string(i) + "]";
      if (!msg.is_object()) return bad("'" + at + "' must be an object, got " + shown(msg), at);
      const auto role = msg.find("role");
      if (role == msg.end())
        return bad("'" + at + ".role' is required", at + ".role", "missing_field");
      if (!role->is_string() || !known_role(role->get_ref<const std::string&>()))
        return bad("'" + at +
                       ".role' must be one of \"system\", \"developer\", \"user\", "
                       "\"assistant\", \"tool\", \"function\", got " +
                       shown(*role),
                   at + ".role");
      if (const auto nm = msg.find("name"); nm != msg.end() && !nm->is_string() && !nm->is_null())
        return bad("'" + at + ".name' must be a string, got " + shown(*nm), at + ".name");
      const auto c = msg.find("content");
      std::string text;
      if (c != msg.end()) content_text(f, at + ".content", *c, text);
      if (f.error) return *f.error;
      if ((c == msg.end() || c->is_null()) && *role != "assistant")
        return bad(
            "'" + at + ".content' is required for a " + role->get<std::string>() + " message",
            at + ".content", "missing_field");
      all += role->get_ref<const std::string&>();
      all += '\n';
      all += text;
      all += '\n';
      tokens.words(text, fnv1a(fnv1a(fnv_basis, role->get_ref<const std::string&>()),
                               "\n" + std::to_string(i)));
    }
    seed = fnv1a(seed, all);
  }
  // The template's own tokens: never an empty prompt.
  const std::uint64_t words_in = std::max<std::uint64_t>(tokens.count(), 1);
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

  field_check f{j, std::nullopt};
  g.stream = f.boolean("stream").value_or(false);
  g.ignore_eos = f.boolean("ignore_eos").value_or(false);
  if (f.error) return *f.error;
  if (const json* so = f.get("stream_options")) {
    if (!so->is_object())
      return bad("'stream_options' must be an object, got " + shown(*so), "stream_options");
    if (!g.stream)
      return bad("'stream_options' can only be given when 'stream' is true", "stream_options");
    field_check o{*so, std::nullopt};
    g.include_usage = o.boolean("include_usage").value_or(false);
    const auto cont = o.boolean("continuous_usage_stats");
    if (o.error) {  // name the field within stream_options
      o.error->message.insert(1, "stream_options.");
      o.error->param = "stream_options." + o.error->param;
      return *o.error;
    }
    if (cont && *cont)
      return bad(
          "'stream_options.continuous_usage_stats' is not supported (usage comes in one "
          "chunk at the end)",
          "stream_options.continuous_usage_stats", "unsupported_value");
  }
  check_sampling_fields(f, kind);
  if (f.error) return *f.error;

  // max_tokens (chat also takes max_completion_tokens, which wins, as in the OpenAI API).
  const std::uint32_t room = lim.max_model_len - g.prompt_tokens;
  g.max_tokens = room;
  for (const char* name : {"max_tokens", "max_completion_tokens"}) {
    if (kind == endpoint::completions && std::string_view(name) == "max_completion_tokens")
      continue;
    const json* mt = f.get(name);
    if (!mt) continue;
    const auto v = f.integer(name, 1, room);
    if (!v) {
      api_error e = *f.error;
      if (e.message.find("must be at most") != std::string::npos)  // say why it is the limit
        e.message += " (this model's maximum context length is " +
                     std::to_string(lim.max_model_len) + " tokens and the prompt has " +
                     std::to_string(g.prompt_tokens) + ")";
      return e;
    }
    g.max_tokens = static_cast<std::uint32_t>(*v);
  }
  // min_tokens (vLLM's): the answer is not stopped before it (at most max_tokens).
  std::uint32_t min_tokens = 0;
  if (const json* mn = f.get("min_tokens")) {
    const auto v = f.integer("min_tokens", 0, int64_max);
    if (!v) return *f.error;
    if (static_cast<std::uint64_t>(*v) > g.max_tokens)
      return bad("'min_tokens' must be at most max_tokens (" + std::to_string(g.max_tokens) +
                     "), got " + shown(*mn),
                 "min_tokens");
    min_tokens = static_cast<std::uint32_t>(*v);
  }

  const std::uint32_t natural = std::max(natural_length(g.seed, lim.eos_range), min_tokens);
  g.stops = !g.ignore_eos && natural <= g.max_tokens;
  g.output_tokens = g.stops ? natural : g.max_tokens;
  if (kind == endpoint::chat)  // vLLM's reasoning parsers serve chat only
    g.reasoning_tokens = static_cast<std::uint32_t>(
        std::min<double>(g.output_tokens, std::round(lim.reasoning_fraction * g.output_tokens)));
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
