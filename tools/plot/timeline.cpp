// SPDX-License-Identifier: MIT
#include <algorithm>
#include <sstream>

#include "common.hpp"

namespace plot {
namespace internal {

picture timeline_picture(const plot_input& in, const fs::path& dir) {
  picture pic;
  pic.name = "timeline";
  pic.data.push_back("timeline.dat");
  // Spans (block 0): row start end kind; kinds: 0 queued, 1 prefill, 2 waiting for the first
  // token (no scheduling recorded), 3 decode (of the answer), 4 after the last token, 5
  // reasoning (first token to first answer token, or to the last token without an answer).
  // Block 1: token chunks (row time tokens kind; kind 0 answer, 1 reasoning). Block 2:
  // preemptions (row time). Block 3: arrival and finish (row time kind).
  std::ostringstream spans, chunks, pre, marks;
  double top = 0;
  std::vector<std::string> names;
  int row = 0;
  bool any_reasoning = false;
  for (const auto& s : in.samples) {
    ++row;
    const auto& r = s.record;
    const double a = r.arrival.value_or(r.send);
    auto rel = [&](double t) { return t - a; };
    std::optional<double> first, last, first_answer;
    std::uint64_t tokens = 0, thinking = 0;
    for (const auto& c : r.chunks) {
      if (c.tokens == 0) continue;
      if (!first) first = c.time;
      last = c.time;
      tokens += c.tokens;
      const bool reasoning = c.kind == tokchron::chunk_kind::reasoning;
      if (reasoning)
        thinking += c.tokens;
      else if (!first_answer)
        first_answer = c.time;
      chunks << row << ' ' << num(rel(c.time)) << ' ' << c.tokens << (reasoning ? " 1\n" : " 0\n");
    }
    any_reasoning = any_reasoning || thinking > 0;
    double end = r.end ? *r.end : (r.chunks.empty() ? r.send : r.chunks.back().time);
    if (!r.preempted.empty()) end = std::max(end, r.preempted.back());
    top = std::max(top, rel(end));
    if (r.scheduled) {
      spans << row << " 0 " << num(rel(*r.scheduled)) << " 0\n";
      if (first) spans << row << ' ' << num(rel(*r.scheduled)) << ' ' << num(rel(*first)) << " 1\n";
    } else if (first) {
      spans << row << " 0 " << num(rel(*first)) << " 2\n";
    }
    // Reasoning: from the first token to the first answer token (or to the last token).
    const std::optional<double> answer_from = thinking > 0 ? first_answer : first;
    if (thinking > 0 && first) {
      const double to = first_answer ? *first_answer : *last;
      if (to > *first) spans << row << ' ' << num(rel(*first)) << ' ' << num(rel(to)) << " 5\n";
    }
    if (answer_from && last && *last > *answer_from)
      spans << row << ' ' << num(rel(*answer_from)) << ' ' << num(rel(*last)) << " 3\n";
    const double tail_from = last ? *last : (r.scheduled ? *r.scheduled : a);
    if (end > tail_from)
      spans << row << ' ' << num(rel(tail_from)) << ' ' << num(rel(end)) << " 4\n";
    for (double t : r.preempted) pre << row << ' ' << num(rel(t)) << '\n';
    marks << row << " 0 0\n" << row << ' ' << num(rel(end)) << " 1\n";
    std::string name = s.role;
    if (!r.id.empty()) name += " (" + r.id + ")";
    name += ": " + std::to_string(tokens) + " tokens";
    if (thinking > 0) name += " (" + std::to_string(thinking) + " reasoning)";
    if (!r.preempted.empty()) name += ", " + std::to_string(r.preempted.size()) + " preempted";
    names.push_back(name);
  }
  auto block = [](const std::ostringstream& s, const char* fallback) {
    const std::string t = s.str();
    return t.empty() ? std::string(fallback) : t;
  };
  std::ostringstream d;
  d << "# token timeline; seconds since each request's arrival\n"
    << "# spans: row start end kind (0 queued, 1 prefill, 2 waiting for first token, 3 decode, 4 "
       "after last token, 5 reasoning)\n"
    << block(spans, "- - - -\n")
    << "\n\n# token chunks: row time tokens kind (0 answer, 1 reasoning)\n"
    << block(chunks, "- - - -\n") << "\n\n# preemptions: row time\n"
    << block(pre, "- -\n") << "\n\n# marks: row time kind (0 arrival, 1 finish)\n"
    << block(marks, "- - -\n");
  write_file(dir / "timeline.dat", d.str());

  const time_unit u = unit_for(top);
  const std::string sc = num(u.scale);
  std::ostringstream b;
  b << "  set title "
    << gp(in.title + ": token timeline" +
          (in.samples_from.empty() ? std::string() : " of " + in.samples_from))
    << "\n  set grid x\n  set key outside right top vertical box font ',9'\n"
    << "  set xlabel " << gp(std::string("time since arrival (") + u.name + ")") << "\n"
    << "  set xrange [0:" << num(top * u.scale * 1.03 + 1e-12) << "]\n"
    << "  set yrange [" << row + 0.6 << ":0.4]\n  set ytics (";
  for (std::size_t i = 0; i < names.size(); ++i)
    b << (i ? ", " : "") << gp(names[i]) << ' ' << i + 1;
  b << ")\n  set ytics nomirror font ',9'\n  set lmargin 44\n  plot ";
  struct kind_style {
    int kind;
    const char* color;
    const char* title;
  };
  const kind_style kinds[] = {{0, "#9e9e9e", "queued"},
                              {1, "#f39c12", "prefill"},
                              {2, "#c8a2c8", "waiting for first token"},
                              {3, "#5dade2", "decode"},
                              {4, "#d5dbdb", "after last token"},
                              {5, reasoning_color, "reasoning (to the first answer token)"}};
  std::string sep;
  const std::string span_text = spans.str();
  for (const auto& k : kinds) {
    if (span_text.find(" " + std::to_string(k.kind) + "\n") == std::string::npos) continue;
    b << sep << "'timeline.dat' index 0 using ($4==" << k.kind << " ? $2*" << sc
      << " : NaN):1:(($3-$2)*" << sc << "):(0) with vectors nohead lw 14 lc rgb '" << k.color
      << "' title " << gp(k.title);
    sep = ", \\\n       ";
  }
  // Answer chunks as dark ticks; reasoning chunks, when there are any, as taller ticks in the
  // reasoning colour.
  b << sep << "'timeline.dat' index 1 using ($4==0 ? $2*" << sc
    << " : NaN):($1-0.22):(0):(0.44) with vectors nohead lw 0.7 lc rgb '#701b2631' title "
    << gp(any_reasoning ? "answer token chunk" : "token chunk");
  if (any_reasoning)
    b << sep << "'timeline.dat' index 1 using ($4==1 ? $2*" << sc
      << " : NaN):($1-0.3):(0):(0.6) with vectors nohead lw 0.7 lc rgb '" << reasoning_color
      << "' title 'reasoning token chunk'";
  sep = ", \\\n       ";
  if (!pre.str().empty())
    b << sep << "'timeline.dat' index 2 using ($2*" << sc
      << "):1 with points pt 2 ps 2.5 lw 3 lc rgb '" << slo_color << "' title 'preempted'";
  b << sep << "'timeline.dat' index 3 using ($3==0 ? $2*" << sc
    << " : NaN):1 with points pt 9 ps 2 lc rgb '#117a65' title 'arrival'" << sep
    << "'timeline.dat' index 3 using ($3==1 ? $2*" << sc
    << " : NaN):1 with points pt 13 ps 2 lc rgb '#1b2631' title 'finish'\n";
  const int height = 220 + 70 * std::max(row, 1);
  write_file(dir / "timeline.gp", script(pic.name, 1200, height, b.str()));
  pic.caption =
      "A few requests from arrival (0) to finish: how much of each bar is queueing (grey), "
      "prefill (orange) and decode (blue); each tick is a token chunk, a red cross a preemption "
      "(its KV cache was dropped and recomputed).";
  bool preempted = false;
  for (const auto& smp : in.samples) preempted = preempted || !smp.record.preempted.empty();
  if (!preempted) pic.caption += " No request was preempted in this run.";
  if (any_reasoning)
    pic.caption +=
        " Reasoning tokens are purple: the purple span runs from the first token (TTFT) to the "
        "first answer token (time to first answer token).";
  return pic;
}

}  // namespace internal

std::vector<std::pair<std::size_t, std::string>> internal::pick(std::vector<pick_candidate> c) {
  std::vector<std::pair<std::size_t, std::string>> picks;
  if (c.empty()) return picks;
  std::stable_sort(c.begin(), c.end(),
                   [](const pick_candidate& x, const pick_candidate& y) { return x.e2e < y.e2e; });
  auto add = [&](std::size_t idx, const std::string& role) {
    for (auto& p : picks)
      if (p.first == idx) {
        p.second += ", " + role;
        return;
      }
    picks.emplace_back(idx, role);
  };
  add(c.back().index, "slowest");
  add(c[(c.size() - 1) / 2].index, "median");
  const pick_candidate* pre = nullptr;
  for (const auto& x : c)  // ascending e2e: the last of equal preemption counts is the slower
    if (x.preemptions > 0 && (!pre || x.preemptions >= pre->preemptions)) pre = &x;
  if (pre) add(pre->index, "preempted");
  return picks;
}

std::vector<sample_request> pick_samples(const std::vector<tokchron::trace_record>& records) {
  std::vector<tokchron::trace_timeline> tls;
  std::vector<std::size_t> index;
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (tokchron::validate(records[i])) continue;
    tls.push_back(tokchron::to_timeline(records[i]));
    index.push_back(i);
  }
  auto out = pick_samples(
      tls, [&](std::size_t i) { return records[index[i]].id; },
      tokchron::trace_clock::time_point{});
  return out;
}

}  // namespace plot
