// SPDX-License-Identifier: MIT
// Disaggregated prefill and decode, end to end: a prefill node and a decode node, each with its
// own live metrics (tokchron's names, labelled role="prefill" / role="decode"), a proxy that
// sends each request to the prefill node and then to the decode node, and a client that times
// its first token. The KV cache moves from one node to the other: the prefill node records it
// sent, the decode node records it arrived (`kv_transfer`: bytes, seconds, tokens).
//
// Then it scrapes both nodes as Prometheus would (the text exposition) and checks that the
// numbers join:
//   sum of client TTFT = prefill node's E2E + proxy hops + decode node's TTFT
//   decode node's TTFT = KV transfer time + the decode node's first step (its prefill time)
//   the bytes and tokens sent = those received; the decode node computed no prompt token.
// Sums of doubles in another order differ by rounding only: each check allows
// 4 n eps (sum of magnitudes), the bound of recursive summation. Exit status 1 on a mismatch.
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tokchron/clock.hpp"
#include "tokchron/export/prometheus.hpp"
#include "tokchron/live/presets.hpp"
#include "tokchron/live/recorder.hpp"
#include "tokchron/live/scrape.hpp"

namespace {
using clock_type = tokchron::manual_clock;
using node = tokchron::basic_live_metrics<clock_type>;
using request = tokchron::basic_live_request<clock_type>;

clock_type::time_point at(double seconds) {
  return clock_type::time_point(
      std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds)));
}
clock_type::duration ns(double seconds) {
  return std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds));
}
double secs(clock_type::duration d) { return std::chrono::duration<double>(d).count(); }

// The value of the sample `name` (a full sample name, e.g. "tokchron_e2e_seconds_sum") in a
// text exposition: its one line, labels skipped. NaN when absent.
double sample(const std::string& text, std::string_view name) {
  std::size_t at_line = 0;
  while (at_line < text.size()) {
    const std::size_t end = text.find('\n', at_line);
    const std::string_view line(text.data() + at_line,
                                (end == std::string::npos ? text.size() : end) - at_line);
    at_line = end == std::string::npos ? text.size() : end + 1;
    if (line.size() <= name.size() || line.compare(0, name.size(), name) != 0) continue;
    const char next = line[name.size()];
    if (next != '{' && next != ' ') continue;
    const std::size_t space = line.rfind(' ');
    return std::strtod(std::string(line.substr(space + 1)).c_str(), nullptr);
  }
  return std::nan("");
}

int failures = 0;
void check(const char* what, double got, double want, double magnitude, int terms) {
  const double bound = 4.0 * terms * DBL_EPSILON * magnitude;
  const bool ok = std::fabs(got - want) <= bound;
  std::printf("%-58s %.9f vs %.9f %s\n", what, got, want, ok ? "ok" : "MISMATCH");
  if (!ok) ++failures;
}
}  // namespace

int main() {
  // Both nodes serve one model; each scrape tells them apart by the role label.
  node prefill(tokchron::live_with_role(tokchron::tokchron_live_options({"model"}, {"llama-3-8b"}),
                                        tokchron::live_role::prefill));
  node decode(tokchron::live_with_role(tokchron::tokchron_live_options({"model"}, {"llama-3-8b"}),
                                       tokchron::live_role::decode));
  // Llama-3-8B in 16-bit: 32 layers x 8 KV heads x 128 dims x 2 (K and V) x 2 bytes per token.
  const std::uint64_t bytes_per_token = 32ull * 8 * 128 * 2 * 2;
  const double link_bytes_per_second = 25e9;  // one 200 Gb/s NIC
  const int n = 40;
  clock_type::time_point prefill_free{};  // the prefill engine runs one prompt at a time
  double client_ttft = 0, hops = 0;
  std::uint64_t prompt_total = 0;
  for (int i = 0; i < n; ++i) {
    // Every instant is a time point of the nodes' clock (whole nanoseconds); intervals are
    // differences of them, as a server's would be.
    const auto sent = at(0.1 * i);  // the client's request, through the proxy
    const std::uint64_t prompt = 128 + static_cast<std::uint64_t>((i * 977) % 3968);
    const std::uint32_t output = 8 + static_cast<std::uint32_t>(i % 24);
    prompt_total += prompt;
    // Prefill node: queue, compute the prompt and its first token, send the KV cache.
    request p;
    (void)prefill.arrive(p, sent, {tokchron::live_series{}, prompt, 1});
    const auto start = sent > prefill_free ? sent : prefill_free;
    const auto first = start + ns(0.02 + 25e-6 * static_cast<double>(prompt));
    prefill_free = first;
    (void)prefill.scheduled(p, start);
    (void)prefill.chunk(p, first, 1);
    const std::uint64_t bytes = prompt * bytes_per_token;
    const auto transfer = ns(0.0005 + static_cast<double>(bytes) / link_bytes_per_second);
    (void)prefill.kv_transfer(p, {bytes, secs(transfer), prompt});    // sent
    (void)prefill.finish(p, first, tokchron::finish_reason::length);  // max_tokens 1
    // Proxy: the prefill answer back, the request on to the decode node.
    const auto arrival = first + ns(0.0003);
    // Decode node: the KV cache arrives, then the first decode step, then the others.
    request d;
    (void)decode.arrive(d, arrival, {tokchron::live_series{}, prompt, output});
    if (decode.kv_transfer(d, {bytes, secs(transfer), prompt}) != tokchron::record_status::ok) {
      std::puts("decode kv_transfer refused");
      return 1;
    }
    const auto step = ns(0.012);
    const auto scheduled = arrival + transfer;
    (void)decode.scheduled(d, scheduled);
    auto t = scheduled;
    for (std::uint32_t k = 0; k < output; ++k) {
      t += step;
      (void)decode.chunk(d, t, 1);
    }
    (void)decode.finish(d, t, tokchron::finish_reason::stop);
    // The client saw its first token when the decode node produced it.
    client_ttft += secs(scheduled + step - sent);
    hops += secs(arrival - first);
  }
  const std::string ptext = tokchron::to_prometheus(tokchron::scrape(prefill));
  const std::string dtext = tokchron::to_prometheus(tokchron::scrape(decode));

  const double p_e2e = sample(ptext, "tokchron_e2e_seconds_sum");
  const double d_ttft = sample(dtext, "tokchron_ttft_seconds_sum");
  const double d_first_step = sample(dtext, "tokchron_prefill_seconds_sum");
  const double d_transfer = sample(dtext, "tokchron_kv_transfer_seconds_sum");
  check("client TTFT = prefill E2E + hops + decode TTFT", client_ttft, p_e2e + hops + d_ttft,
        client_ttft, 3 * n);
  check("decode TTFT = KV transfer + decode first step", d_ttft, d_transfer + d_first_step, d_ttft,
        3 * n);
  check("decode queue time = KV transfer", sample(dtext, "tokchron_queue_seconds_sum"), d_transfer,
        d_transfer, 2 * n);
  check("KV transfers received", sample(dtext, "tokchron_kv_transfers_total"), n, n, 1);
  check("KV bytes received = prompt x bytes per token",
        sample(dtext, "tokchron_kv_transfer_bytes_total"),
        static_cast<double>(prompt_total * bytes_per_token), 1, 1);
  check("prompt tokens computed on the prefill node", sample(ptext, "tokchron_prompt_tokens_total"),
        static_cast<double>(prompt_total), 1, 1);
  check("decode node: every prompt token transferred (cached)",
        sample(dtext, "tokchron_cached_prompt_tokens_total"), static_cast<double>(prompt_total), 1,
        1);
  check("KV bytes sent = received", sample(ptext, "tokchron_kv_transfer_bytes_total"),
        sample(dtext, "tokchron_kv_transfer_bytes_total"), 1, 1);
  check("no recording call refused on either node",
        sample(ptext, "tokchron_misuse_total") + sample(dtext, "tokchron_misuse_total"), 0, 1, 1);
  std::printf(
      "%d requests: client TTFT %.3f s in all = prefill %.3f + hops %.4f + decode %.3f "
      "(KV transfer %.3f + first step %.3f); %s\n",
      n, client_ttft, p_e2e, hops, d_ttft, d_transfer, d_first_step,
      failures == 0 ? "the nodes join" : "MISMATCH");
  return failures == 0 ? 0 : 1;
}
