// SPDX-License-Identifier: MIT
// tokchron-requires: nlohmann-json
#ifndef TOKCHRON_TOOLS_EXECUTOR_SERVE_OPENAI_HPP
#define TOKCHRON_TOOLS_EXECUTOR_SERVE_OPENAI_HPP

/// \file
/// The OpenAI wire format of `batching-executor serve` (docs/tools/serve.md): validating a request
/// body into a `generation_request`, the deterministic text, and the JSON of responses, stream
/// chunks and errors. Pure functions, no I/O; nothing here throws (a bad body is an
/// `api_error`).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tokchron/timeline/request_timeline.hpp"

namespace batching::serve {

enum class endpoint : std::uint8_t { completions, chat };

/// An error as the OpenAI API returns it: HTTP status and `{"error":{message,type,param,code}}`.
struct api_error {
  unsigned status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  ///< empty: null
  std::string code;   ///< empty: null
};
/// `{"error":{...}}` of `e`.
[[nodiscard]] std::string error_json(const api_error& e);

/// What the server was started with that a request is checked against.
struct request_limits {
  std::string model;                   ///< the one served model name
  std::uint32_t max_model_len = 4096;  ///< prompt + output tokens a request may hold
  std::uint32_t eos_range = 256;       ///< the deterministic stop's range (natural_length)
  /// The longest prompt the engine takes (its token budget when chunked prefill is off).
  std::uint32_t max_prompt_tokens = 0xffffffffu;
  /// A chat answer's first round(F x output) tokens are reasoning (`--reasoning-fraction`).
  double reasoning_fraction = 0;
  /// The first tokens of every prompt, up to this many, are the same tokens for the prefix
  /// cache whatever their words: a shared system prompt (`--shared-prefix`).
  std::uint32_t shared_prefix = 0;
  /// The KV block size the prefix cache names prompt blocks by (`generation_request::
  /// block_hashes`); 0: prefix caching off, no hashes.
  std::uint32_t block_size = 0;
};

/// The deepest nesting of arrays and objects a request body may have; deeper is refused (400,
/// `invalid_json`) before a document is built. 128, the default recursion limit of Rust's
/// serde_json (`remaining_depth: 128` in its src/de.rs): no OpenAI request needs more (a tool's
/// JSON schema nests a few levels per object).
inline constexpr std::size_t max_json_depth = 128;

/// A valid request, ready for the engine.
struct generation_request {
  endpoint kind = endpoint::completions;
  bool stream = false, include_usage = false, ignore_eos = false;
  std::uint32_t prompt_tokens = 1;     ///< whitespace-separated words (token ids when given as ids)
  std::uint32_t max_tokens = 0;        ///< after defaulting: max_model_len - prompt_tokens
  std::uint32_t output_tokens = 0;     ///< what it will produce (natural stop or max_tokens)
  bool stops = false;                  ///< ends with finish_reason "stop" (else "length")
  std::uint64_t seed = 0;              ///< the prompt's hash: picks the words
  std::uint32_t reasoning_tokens = 0;  ///< the answer's first tokens that are reasoning (chat)
  /// The chain hashes of the prompt's full KV blocks of `request_limits::block_size` tokens
  /// (kv_cache.hpp's `block_hasher`): a word's key is its bytes (in a chat, with its message's
  /// role), a token id's its value; empty when prefix caching is off.
  std::vector<std::uint64_t> block_hashes;
};

/// Checks `body` for `kind`; a `generation_request` or the error to send.
[[nodiscard]] std::variant<generation_request, api_error> parse_request(
    endpoint kind, std::string_view body, const request_limits& limits) noexcept;

/// The answer's natural length without ignore_eos: 1 + fnv1a(prompt) % eos_range.
[[nodiscard]] std::uint32_t natural_length(std::uint64_t seed, std::uint32_t eos_range) noexcept;

/// The text of output tokens [first, first + n) of an answer seeded `seed`: one word, with a
/// leading space, per token (deterministic).
[[nodiscard]] std::string words(std::uint64_t seed, std::uint32_t first, std::uint32_t n);

/// "stop" or "length" (the OpenAI finish_reason of a finished request); "abort" otherwise.
[[nodiscard]] std::string_view finish_reason_text(tokchron::finish_reason r) noexcept;

/// The pieces every response and chunk carries.
struct response_head {
  endpoint kind = endpoint::completions;
  std::string id;  ///< "cmpl-N" or "chatcmpl-N"
  std::string model;
  std::int64_t created = 0;  ///< Unix seconds
};

/// The first chunk of a chat stream: `delta: {role: "assistant", content: ""}`.
[[nodiscard]] std::string role_chunk(const response_head& h);
/// One content chunk (one engine step's tokens); `finish` empty while the answer goes on. A chat
/// chunk with `reasoning` text carries it in the delta's `reasoning` field and its deprecated
/// copy `reasoning_content` (vLLM's DeltaMessage), and `content` only when `text` is not empty.
[[nodiscard]] std::string content_chunk(const response_head& h, const std::string& text,
                                        std::string_view finish, const std::string& reasoning = {});
/// A response's token counts: `usage`, with `prompt_tokens_details.cached_tokens` when `cached`
/// is set and not 0 (vLLM with --enable-prompt-tokens-details) and
/// `completion_tokens_details.reasoning_tokens` when `reasoning` is set (OpenAI's API).
struct usage_counts {
  std::uint32_t prompt = 0, completion = 0;
  std::optional<std::uint32_t> cached, reasoning;
};
/// The usage chunk (`choices: []`).
[[nodiscard]] std::string usage_chunk(const response_head& h, const usage_counts& u);
/// The whole non-streaming response, with usage; a chat message with `reasoning` text carries it
/// in `reasoning` and `reasoning_content` (vLLM's ChatMessage).
[[nodiscard]] std::string full_response(const response_head& h, const std::string& text,
                                        std::string_view finish, const usage_counts& u,
                                        const std::string& reasoning = {});
/// `GET /v1/models`.
[[nodiscard]] std::string models_json(const std::string& model, std::int64_t created,
                                      std::uint32_t max_model_len);

}  // namespace batching::serve

#endif  // TOKCHRON_TOOLS_EXECUTOR_SERVE_OPENAI_HPP
