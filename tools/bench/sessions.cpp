// SPDX-License-Identifier: MIT
// tokchron-requires: boost-beast (Debian libboost-dev), nlohmann-json
#include "sessions.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <istream>
#include <ostream>
#include <queue>
#include <sstream>
#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>

#include "loadgen/arrivals.hpp"
#include "number_text.hpp"
#include "tokchron/export/json.hpp"
#include "workloads.hpp"

namespace tokchron_bench {

namespace {

struct session_line_error {
  const std::string& name;
  std::uint64_t line;
  [[noreturn]] void operator()(const std::string& field, const std::string& why) const {
    throw session_error(name + ": line " + std::to_string(line) +
                        (field.empty() ? std::string() : ": field " + field) + ": " + why);
  }
};

bool blank_line(const std::string& s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; });
}

// A session id: a string (or an integer, as its digits) of 1 to `max_session_id` characters of
// printable ASCII other than space, '"' and '\' (a header value and a JSON string as they are).
std::string session_id_of(const nlohmann::json& v, const session_line_error& bad,
                          const std::string& field) {
  std::string id;
  if (v.is_string())
    id = v.get<std::string>();
  else if (v.is_number_integer())
    id = v.dump();
  else
    bad(field, "must be a string");
  if (id.empty() || id.size() > max_session_id)
    bad(field, "must be 1 to " + std::to_string(max_session_id) + " characters");
  for (const char c : id) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= ' ' || u > '~' || c == '"' || c == '\\')
      bad(field,
          "'" + quote_bytes(id, 40) +
              "' holds a character other than printable ASCII (space, '\"' and '\\' aside): it "
              "is sent as a header value");
  }
  return id;
}

// A message's text into the plan's pool.
void pool_text(session_plan& p, const std::string& text, std::uint64_t& at, std::uint32_t& size,
               const session_line_error& bad, const std::string& field) {
  if (text.size() > max_session_bytes)
    bad(field, std::to_string(text.size()) + " bytes, more than a conversation may hold (" +
                   std::to_string(max_session_bytes) + ")");
  at = p.text.size();
  size = static_cast<std::uint32_t>(text.size());
  p.text += text;
}

std::uint32_t count_of(const nlohmann::json& v, const session_line_error& bad,
                       const std::string& field, std::uint32_t most) {
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() < 1)
    bad(field, "must be a positive integer");
  if (v.get<std::uint64_t>() > most)
    bad(field, std::to_string(v.get<std::uint64_t>()) + ", more than " + std::to_string(most));
  return static_cast<std::uint32_t>(v.get<std::uint64_t>());
}

// One user turn (AIPerf's SingleTurn fields that a text chat takes, and tokchron's
// input_length/output_length); `where` names it in errors ("turns[2]." or "").
session_turn read_turn(const nlohmann::json& t, const std::string& where, session_plan& p,
                       const session_line_error& bad, bool per_line) {
  if (!t.is_object())
    bad(where.empty() ? std::string() : where.substr(0, where.size() - 1), "must be a JSON object");
  session_turn turn;
  turn.line = bad.line;
  for (const auto& [key, v] : t.items()) {
    const std::string f = where + key;
    if (key == "text") {
      if (!v.is_string()) bad(f, "must be a string");
      turn.has_text = true;
      pool_text(p, v.get_ref<const std::string&>(), turn.text_at, turn.text_size, bad, f);
    } else if (key == "input_length") {
      turn.words = count_of(v, bad, f, max_turn_words);
    } else if (key == "output_length") {
      turn.output_tokens = count_of(v, bad, f, max_replay_length);
    } else if (key == "delay") {
      if (!v.is_number() || !(v.get<double>() >= 0) || v.get<double>() > 9e12)
        bad(f, "must be a number of milliseconds in [0, 9e12]");
      turn.delay_s = v.get<double>() / 1e3;
    } else if (key == "role") {
      if (!v.is_string() || v.get_ref<const std::string&>() != "user")
        bad(f, "must be \"user\" (the assistant's turns are the server's live replies)");
    } else if (key == "timestamp") {
      bad(f,
          "fixed-schedule turns are not supported: a turn is sent a think time (delay) after "
          "the previous reply; give delay");
    } else if (key == "texts" || key == "image" || key == "images" || key == "audio" ||
               key == "audios") {
      bad(f, "is not supported: a turn is one text message (text, or input_length words)");
    } else if (key == "type" || (per_line && key == "session_id")) {
      continue;
    } else {
      bad(f, "is not a field of a turn (text, input_length, output_length, delay, role)");
    }
  }
  if (turn.has_text && turn.words > 0)
    bad(where + "input_length", "goes with no text (a turn is its text or input_length words)");
  if (!turn.has_text && turn.words == 0) bad(where + "text", "missing (or input_length)");
  return turn;
}

}  // namespace

session_plan read_sessions(std::istream& in, const std::string& name) {
  session_plan p;
  std::unordered_map<std::string, std::size_t> by_id;
  std::string line;
  while (std::getline(in, line)) {
    ++p.lines;
    const session_line_error bad{name, p.lines};
    if (p.lines == 1 && line.rfind("\xef\xbb\xbf", 0) == 0) line.erase(0, 3);  // a UTF-8 BOM
    if (blank_line(line)) continue;
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) bad("", "not a JSON object");
    // The session this line adds to: named by session_id (AIPerf) or id (vLLM), else its own.
    std::string id;
    if (const auto s = j.find("session_id"); s != j.end()) {
      id = session_id_of(*s, bad, "session_id");
    } else if (const auto v = j.find("id"); v != j.end() && j.contains("messages")) {
      id = session_id_of(*v, bad, "id");
    } else {
      id = "line-" + std::to_string(p.lines);
    }
    auto [it, fresh] = by_id.emplace(id, p.sessions.size());
    if (fresh) {
      p.sessions.emplace_back();
      p.sessions.back().id = id;
      p.sessions.back().line = p.lines;
    }
    session_spec& s = p.sessions[it->second];
    const auto system = [&](const std::string& text, const std::string& field) {
      if (s.has_system) bad(field, "a second system message for session '" + id + "'");
      if (!s.turns.empty()) bad(field, "a system message after the session's first user turn");
      s.has_system = true;
      pool_text(p, text, s.system_at, s.system_size, bad, field);
    };
    if (const auto turns = j.find("turns"); turns != j.end()) {
      // AIPerf's multi_turn record: {"session_id", "turns": [{"text", "delay"}, ...]}.
      for (const auto& [key, v] : j.items())
        if (key == "system") {
          if (!v.is_string()) bad(key, "must be a string");
          system(v.get_ref<const std::string&>(), key);
        } else if (key != "turns" && key != "session_id" && key != "type") {
          bad(key, "is not a field of a session (session_id, turns, system)");
        }
      if (!turns->is_array() || turns->empty()) bad("turns", "must be a non-empty array of turns");
      for (std::size_t i = 0; i < turns->size(); ++i)
        s.turns.push_back(
            read_turn((*turns)[i], "turns[" + std::to_string(i) + "].", p, bad, false));
    } else if (const auto m = j.find("messages"); m != j.end()) {
      // vLLM's multi-turn conversation: {"id", "messages": [{"role", "content"}, ...]}; its
      // assistant messages give way to the server's live replies.
      for (const auto& [key, v] : j.items())
        if (key != "messages" && key != "id" && key != "session_id")
          bad(key, "is not a field of a conversation (id, messages)");
      if (!m->is_array() || m->empty()) bad("messages", "must be a non-empty array of messages");
      bool answered = true;  // the previous user message has its reply
      for (std::size_t i = 0; i < m->size(); ++i) {
        const std::string at = "messages[" + std::to_string(i) + "]";
        const auto& msg = (*m)[i];
        if (!msg.is_object()) bad(at, "must be a JSON object");
        const auto role = msg.find("role");
        if (role == msg.end() || !role->is_string()) bad(at + ".role", "must be a string");
        const auto content = msg.find("content");
        for (const auto& [key, v] : msg.items())
          if (key != "role" && key != "content") bad(at + "." + key, "is not a message field");
        const std::string& r = role->get_ref<const std::string&>();
        if (r == "assistant") {
          if (answered) bad(at + ".role", "an assistant message that answers no user message");
          answered = true;  // replaced by the live reply
          continue;
        }
        if (content == msg.end() || !content->is_string()) bad(at + ".content", "must be a string");
        if (r == "system") {
          system(content->get_ref<const std::string&>(), at);
        } else if (r == "user") {
          if (!answered)
            bad(at + ".role", "a user message right after another (each needs a reply between)");
          session_turn t;
          t.line = p.lines;
          t.has_text = true;
          pool_text(p, content->get_ref<const std::string&>(), t.text_at, t.text_size, bad,
                    at + ".content");
          s.turns.push_back(t);
          answered = false;
        } else {
          bad(at + ".role", "must be system, user or assistant");
        }
      }
    } else {
      // One turn a line, grouped by session_id (AIPerf's traces with sessions).
      for (const auto& [key, v] : j.items())
        if (key == "system") {
          if (!v.is_string()) bad(key, "must be a string");
          system(v.get_ref<const std::string&>(), key);
        }
      nlohmann::json turn = j;
      turn.erase("system");
      s.turns.push_back(read_turn(turn, "", p, bad, true));
    }
    if (s.turns.empty()) bad("", "session '" + id + "' has no user turn");
  }
  if (in.bad()) throw session_error(name + ": read error after line " + std::to_string(p.lines));
  if (p.sessions.empty())
    throw session_error(name + ": no session (" + std::to_string(p.lines) + " lines)");
  for (const session_spec& s : p.sessions) p.turns += s.turns.size();
  return p;
}

namespace {

// Whitespace-separated words, as `batching-executor serve` counts a prompt's tokens.
std::uint64_t words_in(std::string_view s) noexcept {
  std::uint64_t n = 0;
  bool in = false;
  for (const char c : s) {
    const bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
    if (!space && !in) ++n;
    in = !space;
  }
  return n;
}

// A session in flight.
struct open_session {
  std::uint64_t number = 0;  // its index among the run's sessions (the file's order)
  std::string id;
  const session_spec* spec = nullptr;  // null: synthetic
  std::uint32_t turns = 0;             // turns it has
  std::uint32_t sent = 0;              // turns sent
  std::uint32_t ended = 0;             // turns ended (each logged)
  std::vector<std::string> users;      // generated user messages so far (empty: the file's)
  std::vector<std::string> replies;    // the live replies so far
  std::uint64_t bytes = 0;             // the conversation's text (system, users, replies)
  tokchron_loadgen::rng draws{0};
  std::optional<tokchron_loadgen::arrival> start;  // the arrival that started it
  bool measured = true;
  std::optional<clock::time_point> first_send, last_end;
  // The latest turn's verdict (set by `on_outcome`, read by `on_finish`): ok, and why not.
  bool last_ok = false;
  std::string stop;  // "failed", "too_long"
  bool fast_failure = false;
  // The turn being prepared or sent: its max_tokens, its user message's words and bytes.
  std::uint32_t next_output = 1;
  std::uint32_t next_words = 0;
  std::uint64_t next_bytes = 0;
};

struct turn_ref {
  std::uint64_t session = 0;
  std::uint32_t turn = 0;
};

struct session_state {
  session_settings s;
  std::shared_ptr<session_stats> stats = std::make_shared<session_stats>();
  std::unordered_map<std::uint64_t, open_session> open;  // by number
  std::unordered_map<std::uint64_t, turn_ref> turns;     // by request id, until it ends
  std::vector<std::uint32_t> fast_failures;              // closed loop: by user
  tokchron_loadgen::rng jitter{0};
  std::uint64_t sessions_begun = 0;
};

std::string_view plan_text(const session_plan& p, std::uint64_t at, std::uint32_t size) {
  return std::string_view(p.text).substr(at, size);
}

// The key of a synthetic user message's words (seed, session, turn): never another's.
std::uint64_t user_key(std::uint64_t seed, std::uint64_t session, std::uint32_t turn) {
  return tokchron_loadgen::mix_seed(tokchron_loadgen::mix_seed(seed ^ 0x5e551075ULL, session),
                                    turn);
}

// Prepares turn `k` of `o` (its user message, its words and bytes, and max_tokens); false
// when the conversation would then hold more than `max_session_bytes`.
bool prepare_turn(const session_state& st, open_session& o, std::uint32_t k) {
  const session_turn* t = o.spec ? &o.spec->turns[k] : nullptr;
  o.next_output =
      t && t->output_tokens > 0 ? t->output_tokens : st.s.work.output.sample_length(o.draws);
  o.next_output = std::min(o.next_output, max_replay_length);
  std::string own;  // a generated message (empty for a file's text)
  if (t && t->has_text) {
    const std::string_view text = plan_text(*st.s.plan, t->text_at, t->text_size);
    o.next_words = static_cast<std::uint32_t>(std::min<std::uint64_t>(words_in(text), 0xffffffffu));
    o.next_bytes = text.size();
  } else {
    o.next_words = t ? t->words : std::min(st.s.work.prompt.sample_length(o.draws), max_turn_words);
    append_words(own, user_key(st.s.work.seed, o.number, k), 1, o.next_words, false);
    o.next_bytes = own.size();
  }
  if (o.bytes + o.next_bytes > st.s.max_bytes) return false;
  o.users.push_back(std::move(own));
  return true;
}

// The user message of turn `k` of `o`.
std::string_view user_message(const session_state& st, const open_session& o, std::uint32_t k) {
  if (o.spec && o.spec->turns[k].has_text)
    return plan_text(*st.s.plan, o.spec->turns[k].text_at, o.spec->turns[k].text_size);
  return o.users.at(k);
}

void log_turn(const session_state& st, const open_session& o, std::uint32_t k,
              const request_outcome& r, std::size_t reply_bytes, std::uint64_t reply_words,
              const char* stop) {
  if (!st.s.log) return;
  nlohmann::ordered_json j;
  j["session"] = o.id;
  j["turn"] = k + 1;
  j["request_id"] = r.request_id;
  j["user_words"] = o.next_words;
  j["ok"] = r.error.empty();
  j["reply_bytes"] = reply_bytes;
  j["reply_words"] = reply_words;
  if (!r.error.empty()) j["error"] = r.error;
  if (stop) j["session_end"] = stop;
  *st.s.log << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
}

// The time `t` plus `s` seconds, if within the latest arrival a run takes.
std::optional<tokchron_loadgen::time_point> after(tokchron_loadgen::time_point t, double s) {
  const double at = std::chrono::duration<double>(t.time_since_epoch()).count() + s;
  if (!(at < tokchron_loadgen::max_arrival_s)) return std::nullopt;
  return tokchron_loadgen::time_point(tc::from_seconds<tokchron_loadgen::duration>(at));
}

class session_source final : public tokchron_loadgen::arrival_source {
 public:
  using time_point = tokchron_loadgen::time_point;
  explicit session_source(std::shared_ptr<session_state> st)
      : st_(std::move(st)), starts_(start_workload(*st_)) {}

  [[nodiscard]] time_point end() const noexcept override { return starts_.end(); }
  [[nodiscard]] std::optional<time_point> next_arrival() const override {
    std::optional<time_point> t = starts_.next_arrival();
    if (!due_.empty() && (!t || due_.top().at < *t)) t = due_.top().at;
    return t;
  }

  void release(time_point now, std::vector<tokchron_loadgen::arrival>& out) override {
    const std::size_t first = out.size();
    while (!due_.empty() && due_.top().at <= now) {
      const pending p = due_.top();
      due_.pop();
      send(st_->open.at(p.session), p.at, out);
    }
    begun_.clear();
    starts_.release(now, begun_);
    for (const tokchron_loadgen::arrival& b : begun_) {
      if (b.at >= starts_.end()) continue;
      const std::uint64_t number = st_->sessions_begun++;
      open_session& o = st_->open[number];
      o.number = number;
      o.start = b;
      o.draws =
          tokchron_loadgen::rng(tokchron_loadgen::mix_seed(st_->s.work.seed ^ 0x5e55, number));
      o.measured =
          std::chrono::duration<double>(b.at.time_since_epoch()).count() >= st_->s.warmup_s;
      if (st_->s.plan) {
        o.spec = &st_->s.plan->sessions[number];
        o.id = o.spec->id;
        o.turns = static_cast<std::uint32_t>(o.spec->turns.size());
        if (o.spec->has_system) o.bytes = o.spec->system_size;
      } else {
        o.id = st_->s.id_prefix + "session-" + std::to_string(st_->s.first_session + number);
        o.turns = st_->s.turns.sample_length(o.draws);
      }
      if (o.measured) ++st_->stats->started;
      // A first message always fits (read_sessions, max_turn_words), but for a system message.
      if (!prepare_turn(*st_, o, 0)) {
        o.stop = "too_long";
        close(o, b.at);
        continue;
      }
      send(o, b.at, out);
    }
    std::stable_sort(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
                     [](const tokchron_loadgen::arrival& a, const tokchron_loadgen::arrival& b) {
                       return a.at < b.at;
                     });
  }

  void on_finish(const tokchron_loadgen::arrival& r, time_point t) override {
    const auto ref = st_->turns.find(r.id);
    if (ref == st_->turns.end()) return;
    const turn_ref tr = ref->second;
    st_->turns.erase(ref);
    auto it = st_->open.find(tr.session);
    if (it == st_->open.end()) return;
    open_session& o = it->second;
    const std::uint32_t next = tr.turn + 1;
    if (o.last_ok && next < o.turns) {
      if (prepare_turn(*st_, o, next)) {
        const std::optional<double> given = o.spec ? o.spec->turns[next].delay_s : std::nullopt;
        const double think = given ? *given : st_->s.think.sample(o.draws);
        if (const auto at = after(t, think)) due_.push({*at, o.number});
        return;  // an arrival past the latest a run takes: open, cut at the end
      }
      o.stop = "too_long";
    }
    close(o, t);
  }

 private:
  struct pending {
    time_point at;
    std::uint64_t session;
    bool operator>(const pending& b) const noexcept {
      return at != b.at ? at > b.at : session > b.session;
    }
  };

  static tokchron_loadgen::workload start_workload(const session_state& st) {
    tokchron_loadgen::workload w = st.s.work;
    if (w.memory_limit == 0) w.memory_limit = tokchron_loadgen::default_memory_limit;
    std::uint64_t most = st.s.max_sessions;
    if (st.s.plan && (most == 0 || most > st.s.plan->sessions.size()))
      most = st.s.plan->sessions.size();
    w.max_requests = most;
    return w;
  }

  // Sends turn `o.sent` of `o` at `at`.
  void send(open_session& o, time_point at, std::vector<tokchron_loadgen::arrival>& out) {
    tokchron_loadgen::arrival& r = out.emplace_back();
    r.id = next_id_++;
    r.user = o.start ? o.start->user : 0;
    r.at = at;
    r.prompt_tokens = 1;
    r.output_tokens = o.next_output;
    r.predicted_output = o.next_output;
    st_->turns[r.id] = {o.number, o.sent};
    ++o.sent;
    if (o.measured) ++st_->stats->turns;
  }

  // The session ended (completed, failed, too long): its user, in a closed loop, thinks and
  // starts its next one (after a backoff when it failed fast, as `run_load`'s users do).
  void close(open_session& o, time_point t) {
    session_stats& s = *st_->stats;
    if (o.measured) {
      if (o.stop.empty()) {
        ++s.completed;
        if (o.first_send && o.last_end)
          (void)s.duration_s.add(tc::to_seconds(*o.last_end - *o.first_send));
        (void)s.turns_per_session.add(o.turns);
      } else if (o.stop == "failed") {
        ++s.failed;
      } else {
        ++s.too_long;
      }
    }
    const std::uint64_t number = o.number;  // `o` goes with its entry
    if (o.start && st_->s.work.mode == tokchron_loadgen::arrival_mode::closed) {
      const tokchron_loadgen::arrival b = *o.start;  // `o` goes with its entry
      time_point resume = t;
      if (b.user < st_->fast_failures.size()) {
        std::uint32_t& k = st_->fast_failures[b.user];
        if (o.fast_failure) {
          const backoff bo;
          k = std::min<std::uint32_t>(k + 1, 62);
          auto d = bo.first;
          for (std::uint32_t i = 1; i < k && d < bo.most; ++i) d *= 2;
          d = std::min(d, bo.most);
          const double ds = std::chrono::duration<double>(d).count();
          if (const auto at = after(t, st_->jitter.uniform(ds / 2, ds))) resume = *at;
        } else {
          k = 0;
        }
      }
      st_->open.erase(number);
      starts_.on_finish(b, resume);
      return;
    }
    st_->open.erase(number);
  }

  std::shared_ptr<session_state> st_;
  tokchron_loadgen::arrival_generator starts_;  // the sessions' arrivals
  std::vector<tokchron_loadgen::arrival> begun_;
  std::priority_queue<pending, std::vector<pending>, std::greater<pending>> due_;
  std::uint64_t next_id_ = 0;
};

}  // namespace

session_hooks make_session_hooks(const session_settings& settings) {
  auto st = std::make_shared<session_state>();
  st->s = settings;
  st->s.work.validate();
  if (settings.plan && settings.plan->sessions.empty())
    throw std::invalid_argument("--sessions: no session");
  if (st->s.work.mode == tokchron_loadgen::arrival_mode::closed)
    st->fast_failures.assign(st->s.work.users, 0);
  st->jitter = tokchron_loadgen::rng(tokchron_loadgen::mix_seed(settings.work.seed, 0x5e55b0ff));
  st->stats->by_turn.resize(session_turn_rows + 1);
  st->stats->turn_failed.assign(session_turn_rows + 1, 0);
  st->stats->max_bytes = settings.max_bytes;
  session_hooks h;
  h.stats = st->stats;
  h.keep_reply = settings.max_bytes;
  h.schedule = [st] { return std::make_unique<session_source>(st); };
  h.body = [st](const target& t, const tokchron_loadgen::arrival& r) {
    const turn_ref tr = st->turns.at(r.id);
    const open_session& o = st->open.at(tr.session);
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    if (o.spec && o.spec->has_system)
      messages.push_back({{"role", "system"},
                          {"content", std::string(plan_text(*st->s.plan, o.spec->system_at,
                                                            o.spec->system_size))}});
    for (std::uint32_t k = 0; k < tr.turn; ++k) {
      messages.push_back({{"role", "user"}, {"content", std::string(user_message(*st, o, k))}});
      messages.push_back({{"role", "assistant"}, {"content", o.replies.at(k)}});
    }
    messages.push_back({{"role", "user"}, {"content", std::string(user_message(*st, o, tr.turn))}});
    return chat_request_body(t, std::move(messages), r.output_tokens);
  };
  h.headers = [st](const tokchron_loadgen::arrival& r) {
    std::vector<std::pair<std::string, std::string>> out;
    if (!st->s.header.empty())
      out.emplace_back(st->s.header, st->open.at(st->turns.at(r.id).session).id);
    return out;
  };
  h.on_outcome = [st](request_outcome& r) {
    const auto ref = st->turns.find(r.id);
    if (ref == st->turns.end()) return;
    const turn_ref tr = ref->second;
    open_session& o = st->open.at(tr.session);
    session_stats& s = *st->stats;
    const std::size_t row = std::min<std::size_t>(tr.turn, session_turn_rows);
    if (r.measured) {
      if (!s.by_turn[row]) s.by_turn[row].emplace(tc::profiles::canonical);
      s.by_turn[row]->add(r.tl);
      if (!r.error.empty()) ++s.turn_failed[row];
    }
    const std::size_t reply_bytes = r.reply.size();
    const std::uint64_t reply_words = st->s.log ? words_in(r.reply) : 0;
    if (tr.turn == 0) o.first_send = r.tl.send_time();
    o.last_end = r.tl.finish_time();
    o.last_ok = r.error.empty() && !r.reply_cut;
    const char* stop = nullptr;
    if (!r.error.empty()) {
      o.stop = "failed";
      const auto sent = r.tl.send_time(), end = r.tl.finish_time();
      o.fast_failure = sent && end && *end - *sent < backoff().fast;
      stop = "failed";
    } else if (r.reply_cut || o.bytes + o.next_bytes + r.reply.size() > st->s.max_bytes) {
      o.last_ok = false;
      o.stop = "too_long";
      stop = "too_long";
    } else {
      o.bytes += o.next_bytes + r.reply.size();
      o.replies.push_back(std::move(r.reply));
      r.reply.clear();
      if (tr.turn + 1 == o.turns) stop = "completed";
    }
    ++o.ended;
    log_turn(*st, o, tr.turn, r, reply_bytes, reply_words, stop);
  };
  h.finish = [st] {
    for (const auto& [n, o] : st->open) {
      if (o.measured) ++st->stats->cut;
      // A session the run's end cut has no turn that ended it: a line of its own says so.
      if (st->s.log && o.ended > 0) {
        nlohmann::ordered_json j;
        j["session"] = o.id;
        j["turns"] = o.ended;
        j["session_end"] = "cut";
        *st->s.log << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
      }
    }
    st->open.clear();
  };
  return h;
}

namespace {

std::string turn_name(std::size_t row) {
  return row < session_turn_rows ? std::to_string(row + 1)
                                 : std::to_string(session_turn_rows + 1) + "+";
}

}  // namespace

void print_sessions(std::ostream& out, const session_stats& s) {
  out << "\nSessions: " << s.started << " started, " << s.completed << " completed every turn, "
      << s.failed << " stopped by a failed turn, " << s.too_long << " stopped at the "
      << s.max_bytes << "-byte conversation limit, " << s.cut << " cut by the run's end; "
      << s.turns << " turns sent\n";
  if (!s.duration_s.empty()) {
    const auto q = [&](double p) {
      return fixed(*s.duration_s.quantile(p, tc::quantile_method::nearest_rank), 3);
    };
    out << "Session duration (completed sessions, first turn's send to last turn's end): mean "
        << fixed(*s.duration_s.mean(), 3) << " s, median " << q(0.5) << " s, P99 " << q(0.99)
        << " s, max " << q(1.0) << " s; turns per session: mean "
        << fixed(*s.turns_per_session.mean(), 2) << "\n";
  }
  out << "By turn (canonical profile, completed requests; prompt tokens as the server counted "
         "them):\n";
  out << std::right << std::setw(6) << "turn" << std::setw(10) << "requests" << std::setw(8)
      << "failed" << std::setw(14) << "prompt_mean" << std::setw(13) << "ttft_p50_ms"
      << std::setw(13) << "ttft_p99_ms" << std::setw(13) << "tpot_p50_ms" << std::setw(12)
      << "itl_p50_ms" << std::setw(12) << "e2e_p50_ms" << std::setw(12) << "e2e_p99_ms" << '\n';
  for (std::size_t row = 0; row < s.by_turn.size(); ++row) {
    if (!s.by_turn[row]) continue;
    const tc::run_summary r = s.by_turn[row]->summary();
    const auto ms = [](const tc::distribution& d, double pc) {
      const auto v = pc == 50 ? d.median : d.at(pc);
      return v ? fixed(*v * 1e3, 2) : std::string("-");
    };
    out << std::setw(6) << turn_name(row) << std::setw(10) << r.requests << std::setw(8)
        << s.turn_failed[row] << std::setw(14)
        << (r.completed
                ? fixed(static_cast<double>(r.input_tokens) / static_cast<double>(r.completed), 1)
                : std::string("-"))
        << std::setw(13) << ms(r.ttft, 50) << std::setw(13) << ms(r.ttft, 99) << std::setw(13)
        << ms(r.tpot, 50) << std::setw(12) << ms(r.itl, 50) << std::setw(12) << ms(r.e2e, 50)
        << std::setw(12) << ms(r.e2e, 99) << '\n';
  }
}

std::string sessions_json(const session_stats& s) {
  nlohmann::ordered_json j;
  j["started"] = s.started;
  j["completed"] = s.completed;
  j["failed"] = s.failed;
  j["too_long"] = s.too_long;
  j["cut"] = s.cut;
  j["turns"] = s.turns;
  j["conversation_limit_bytes"] = s.max_bytes;
  // A value, or null when there is none (JSON has no infinities either).
  const auto number = [](const std::optional<double>& v) {
    return v && std::isfinite(*v) ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
  };
  const auto dist = [&](const tc::exact_quantiles<double>& q) {
    nlohmann::ordered_json d;
    d["count"] = q.count();
    const auto at = [&](double p) {
      return number(q.quantile(p, tc::quantile_method::nearest_rank));
    };
    d["mean"] = number(q.mean());
    d["median"] = at(0.5);
    d["p90"] = at(0.9);
    d["p99"] = at(0.99);
    d["max"] = at(1.0);
    return d;
  };
  j["duration_s"] = dist(s.duration_s);
  j["turns_per_session"] = dist(s.turns_per_session);
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (std::size_t row = 0; row < s.by_turn.size(); ++row) {
    if (!s.by_turn[row]) continue;
    nlohmann::ordered_json r;
    r["turn"] = turn_name(row);
    r["failed"] = s.turn_failed[row];
    r["summary"] = tc::summary_json(s.by_turn[row]->summary());
    rows.push_back(std::move(r));
  }
  j["by_turn"] = std::move(rows);
  return j.dump();
}

}  // namespace tokchron_bench
