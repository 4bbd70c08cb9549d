// SPDX-License-Identifier: MIT
#include "report/inputs.hpp"

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <utility>

namespace tokchron_report {

std::optional<std::string> unreadable_reason(const std::string& f) {
  if (f == "-") return std::nullopt;
  std::error_code ec;
  if (std::filesystem::is_directory(f, ec)) return "is a directory";
  std::ifstream probe(f, std::ios::binary);
  if (!probe) return std::string(std::strerror(errno));
  return std::nullopt;
}

input_files readable_inputs(const std::vector<std::string>& files, std::ostream& err) {
  input_files r;
  std::string first;
  for (const std::string& f : files) {
    if (const auto why = unreadable_reason(f)) {
      if (first.empty()) first = "cannot open " + f + ": " + *why;
      r.unreadable.push_back(f);
      if (files.size() > 1)
        err << "tokchron-report: cannot open " << f << ": " << *why
            << " (left out; counted as unreadable_files)\n";
    } else {
      r.readable.push_back(f);
    }
  }
  if (r.readable.empty())
    throw input_error(files.size() == 1 ? first + " (nothing was reported)"
                                        : "none of the " + std::to_string(files.size()) +
                                              " input files could be read (nothing was reported)");
  return r;
}

namespace {

void add_error(input_stats& st, tc::trace_error&& e, const std::string& file) {
  ++st.malformed;
  if (st.errors.size() >= kept_errors) return;
  st.errors.push_back(std::move(e));
  st.error_files.push_back(file);
}

}  // namespace

input_stats read_inputs(const std::vector<std::string>& files, const read_options& opt,
                        const timeline_sink& on_timeline) {
  if (opt.kind != "auto" && opt.kind != "trace" && opt.kind != "vllm")
    throw usage_error("--input must be auto, trace or vllm");
  input_stats st;
  std::vector<char> buf(std::size_t{1} << 20);
  aligner clocks;
  tc::trace_record rec;
  std::optional<tc::trace_error> err;
  for (const std::string& f : files) {
    std::ifstream file;
    std::istream* in = &std::cin;
    if (f != "-") {
      file.open(f, std::ios::binary);
      if (!file) throw input_error("cannot open " + f + ": " + std::strerror(errno));
      in = &file;
    }
    // The first block decides the kind; lines are then cut from successive blocks.
    std::string pending;
    in->read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in->bad()) throw input_error("cannot read " + f);
    pending.assign(buf.data(), static_cast<std::size_t>(in->gcount()));
    const std::string_view head(pending);
    const std::string_view first_line = head.substr(0, head.find('\n'));
    const bool vllm =
        opt.kind == "vllm" ||
        (opt.kind == "auto" && first_line.find("\"chunks\"") == std::string_view::npos &&
         head.find("\"ttfts\"") != std::string_view::npos &&
         head.find("\"itls\"") != std::string_view::npos);
    if (vllm) {
      if (files.size() != 1)
        throw input_error("a vLLM result file is a whole run: give it alone (" + f + ")");
      // One JSON document, read whole: bounded by --max-line-bytes like any line.
      for (;;) {
        if (pending.size() > opt.max_line_bytes)
          throw input_error(f + ": a vLLM result file is one JSON document, and this one is " +
                            "longer than " + std::to_string(opt.max_line_bytes) +
                            " bytes (--max-line-bytes); reading stopped, nothing was reported");
        if (!*in) break;
        in->read(buf.data(), static_cast<std::streamsize>(buf.size()));
        if (in->bad()) throw input_error("cannot read " + f);
        pending.append(buf.data(), static_cast<std::size_t>(in->gcount()));
      }
      std::istringstream whole(std::move(pending));
      tc::vllm_result r;
      try {
        r = tc::read_vllm_result(whole);
      } catch (const std::invalid_argument& e) {
        throw input_error(f + ": " + e.what());
      }
      st.vllm = true;
      st.duration = r.duration;
      st.lines += r.records.size();
      for (std::size_t i = 0; i < r.records.size(); ++i) {
        ++st.requests;
        if (opt.on_name)
          opt.on_name(r.records[i].id.empty() ? "request " + std::to_string(i + 1)
                                              : r.records[i].id);
        on_timeline(tc::to_timeline(r.records[i]));
      }
      continue;
    }
    clocks.begin_file(f);
    std::size_t line_no = 0;
    auto too_long = [&](std::size_t line) {
      return input_error(f + ": line " + std::to_string(line) + " is longer than " +
                         std::to_string(opt.max_line_bytes) +
                         " bytes (--max-line-bytes); reading stopped, nothing was reported");
    };
    auto take_lines = [&](bool at_eof) {
      std::size_t pos = 0;
      for (;;) {
        std::size_t nl = pending.find('\n', pos);
        if (nl == std::string::npos) {
          if (pos < pending.size() && pending.size() - pos > opt.max_line_bytes)
            throw too_long(line_no + 1);
          if (!at_eof || pos >= pending.size()) break;
          nl = pending.size();
        }
        ++line_no;
        if (nl - pos > opt.max_line_bytes) throw too_long(line_no);
        if (tc::parse_trace_line(std::string_view(pending).substr(pos, nl - pos), line_no, rec,
                                 err)) {
          if (auto misplaced = clocks.place(rec)) {
            add_error(st,
                      tc::trace_error{line_no, std::move(misplaced->field),
                                      std::move(misplaced->message)},
                      f);
          } else {
            ++st.requests;
            if (rec.benchmark_start &&
                (!st.benchmark_start || *rec.benchmark_start < *st.benchmark_start))
              st.benchmark_start = rec.benchmark_start;
            if (opt.on_name)
              opt.on_name(rec.id.empty() ? f + " line " + std::to_string(line_no) : rec.id);
            on_timeline(tc::to_timeline(rec));
          }
        } else if (err) {
          add_error(st, std::move(*err), f);
        }
        pos = nl + 1;
      }
      pending.erase(0, std::min(pos, pending.size()));
    };
    for (;;) {
      take_lines(false);
      if (!*in) break;
      in->read(buf.data(), static_cast<std::streamsize>(buf.size()));
      if (in->bad()) throw input_error("cannot read " + f);
      pending.append(buf.data(), static_cast<std::size_t>(in->gcount()));
    }
    take_lines(true);
    st.lines += line_no;
  }
  clocks.finish();
  st.clocks = clocks.result();
  return st;
}

input_stats read_inputs_pipelined(const std::vector<std::string>& files, const read_options& opt,
                                  const timeline_sink& on_timeline, const timeline_peek& on_read) {
  constexpr std::size_t batch_size = 512, max_batches = 8;
  using batch = std::vector<tc::trace_timeline>;
  struct channel {
    std::mutex m;
    std::condition_variable cv;
    std::deque<batch> full;
    bool done = false, stop = false;
    std::exception_ptr error;
  } ch;
  struct stopped {};  // unwinds the reader when this side has stopped
  input_stats st;
  auto read = [&] {
    batch b;
    auto hand_over = [&] {
      std::unique_lock<std::mutex> lock(ch.m);
      ch.cv.wait(lock, [&] { return ch.full.size() < max_batches || ch.stop; });
      if (ch.stop) throw stopped{};
      ch.full.push_back(std::move(b));
      lock.unlock();
      ch.cv.notify_all();
      b = batch();
    };
    std::exception_ptr error;
    try {
      st = read_inputs(files, opt, [&](tc::trace_timeline&& tl) {
        if (on_read) on_read(static_cast<const tc::trace_timeline&>(tl));
        if (b.empty()) b.reserve(batch_size);
        b.push_back(std::move(tl));
        if (b.size() == batch_size) hand_over();
      });
    } catch (const stopped&) {
      b.clear();  // this side has stopped: nothing more to hand on
    } catch (...) {
      error = std::current_exception();  // the requests read before it are still handed on
    }
    try {
      if (!b.empty()) hand_over();
    } catch (const stopped&) {
    } catch (...) {
      if (!error) error = std::current_exception();
    }
    {
      const std::lock_guard<std::mutex> lock(ch.m);
      ch.error = error;
      ch.done = true;
    }
    ch.cv.notify_all();
  };
  std::thread reader;
  try {
    reader = std::thread(read);
  } catch (const std::system_error&) {  // no second thread: read here
    return read_inputs(files, opt, [&](tc::trace_timeline&& tl) {
      if (on_read) on_read(static_cast<const tc::trace_timeline&>(tl));
      on_timeline(std::move(tl));
    });
  }
  try {
    for (;;) {
      batch b;
      {
        std::unique_lock<std::mutex> lock(ch.m);
        ch.cv.wait(lock, [&] { return !ch.full.empty() || ch.done; });
        if (ch.full.empty()) break;
        b = std::move(ch.full.front());
        ch.full.pop_front();
      }
      ch.cv.notify_all();
      for (auto& tl : b) on_timeline(std::move(tl));
    }
  } catch (...) {
    {
      const std::lock_guard<std::mutex> lock(ch.m);
      ch.stop = true;
    }
    ch.cv.notify_all();
    reader.join();
    throw;
  }
  reader.join();
  if (ch.error) std::rethrow_exception(ch.error);
  return st;
}

loaded_inputs load_inputs(const std::vector<std::string>& files, const read_options& opt) {
  loaded_inputs out;
  std::vector<tc::trace_timeline> tls;
  std::vector<std::string> names;
  read_options o = opt;
  o.on_name = [&](const std::string& name) {
    if (opt.on_name) opt.on_name(name);
    names.push_back(name);
  };
  static_cast<input_stats&>(out) =
      read_inputs(files, o, [&](tc::trace_timeline&& tl) { tls.push_back(std::move(tl)); });
  out.timelines = std::move(tls);
  out.names = std::move(names);
  return out;
}

}  // namespace tokchron_report
