// SPDX-License-Identifier: MIT
#include "report/sla.hpp"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

#include "tokchron/export/json.hpp"

namespace tokchron_report {

sla_settings sla_settings_from(const arguments& args) {
  sla_settings s;
  if (const auto it = args.values.find("slo"); it != args.values.end())
    for (const std::string& spec : it->second) {
      try {
        tc::sla one = tc::sla::parse(spec);
        for (auto& o : one.objectives) s.objectives.objectives.push_back(o);
      } catch (const std::invalid_argument& e) {
        throw usage_error(std::string("--slo: ") + e.what());
      }
    }
  if (auto v = args.get("goodput")) {
    try {
      s.goodput = tc::request_slo::parse(*v);
    } catch (const std::invalid_argument& e) {
      throw usage_error(std::string("--goodput: ") + e.what());
    }
  }
  if (auto v = args.get("slo-confidence")) {
    if (s.objectives.objectives.empty())
      throw usage_error("--slo-confidence applies to --slo verdicts: give --slo too");
    char* end = nullptr;
    const double c = std::strtod(v->c_str(), &end);
    if (v->empty() || *end != '\0' || !(c >= 0.5 && c < 1))
      throw usage_error("--slo-confidence must be in [0.5, 1)");
    s.eval.confidence = c;
  }
  return s;
}

tc::sla drawn_objectives(const sla_settings& s) {
  tc::sla out = s.objectives;
  if (!s.goodput) return out;
  auto limit = [&](tc::slo_metric m, const std::optional<double>& v) {
    if (v)
      out.objectives.emplace_back(m, tc::slo_statistic::max, 100, tc::slo_comparator::less_equal,
                                  *v);
  };
  limit(tc::slo_metric::ttft, s.goodput->ttft_s);
  limit(tc::slo_metric::tpot, s.goodput->tpot_s);
  limit(tc::slo_metric::e2e, s.goodput->e2e_s);
  return out;
}

tc::slo_distributions<> slo_distributions_of(const loaded_inputs& in, const tc::profile& p) {
  tc::slo_distributions<> d;
  const bool canonical = &p == &tc::profiles::canonical;
  for (const auto& tl : in.timelines) {
    if (canonical) {
      d.add(tl);
      continue;
    }
    if (!tl.finished()) continue;
    const tc::request_metrics r = tc::evaluate(
        p, tl, [&](double gap, std::uint64_t n) noexcept { d.add(tc::slo_metric::itl, gap, n); });
    d.add(r);
    if (r.completed && r.itl) d.add(tc::slo_metric::itl, *r.itl);
  }
  return d;
}

int worse(int a, int b) {
  if (a == exit_slo_fail || b == exit_slo_fail) return exit_slo_fail;
  if (a == exit_slo_undecided || b == exit_slo_undecided) return exit_slo_undecided;
  return exit_ok;
}

namespace {
/// A JSON value's type in words, for messages.
std::string type_of(const nlohmann::json& v) {
  if (v.is_string()) return "a string (" + v.dump() + ")";
  if (v.is_boolean()) return std::string("a boolean (") + (v.get<bool>() ? "true" : "false") + ")";
  if (v.is_null()) return "null";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  return "a number";
}
}  // namespace

std::vector<tc::claims> read_claims(const std::string& path, std::ostream& err) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (path != "-") {
    file.open(path, std::ios::binary);
    if (!file) throw input_error("cannot open " + path);
    in = &file;
  }
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(*in);
  } catch (const nlohmann::json::exception& e) {
    throw input_error(path + ": " + e.what());
  }
  std::vector<const nlohmann::json*> reports;
  if (doc.is_object() && doc.contains("reports")) {
    if (!doc["reports"].is_array()) throw input_error(path + ": \"reports\" is not an array");
    for (const auto& r : doc["reports"]) reports.push_back(&r);
  } else if (doc.is_array()) {
    for (const auto& r : doc) reports.push_back(&r);
  } else {
    reports.push_back(&doc);
  }
  std::vector<tc::claims> out;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const nlohmann::json& r = *reports[i];
    if (!r.is_object())
      throw input_error(path + ": report " + std::to_string(i + 1) + " is not an object");
    tc::claims c;
    c.name = "report " + std::to_string(i + 1);
    if (const auto n = r.find("name"); n != r.end()) {
      if (!n->is_string())
        throw input_error(path + ": " + c.name + ": field 'name' must be a string, not " +
                          type_of(*n));
      c.name = n->get<std::string>();
    }
    for (const auto& [key, val] : r.items()) {
      if (key == "name") continue;
      const bool known = c.field(key) != nullptr;
      if (!val.is_number()) {
        if (known)
          throw input_error(path + ": " + c.name + ": claim '" + key + "' must be a number, not " +
                            type_of(val));
        continue;  // a label such as "model": "llama"
      }
      if (!known)
        err << "tokchron-report: " << path << ": ignoring unknown claim '" << key << "'\n";
      else if (!c.set(key, val.get<double>()))
        throw input_error(path + ": " + c.name + ": claim '" + key +
                          "' must be a finite number >= 0");
    }
    out.push_back(std::move(c));
  }
  if (out.empty()) throw input_error(path + ": no report");
  return out;
}

int run_audit_command(const arguments& args, std::ostream& out, std::ostream& err) {
  const std::string format = args.get("format").value_or("table");
  if (format != "table" && format != "json") throw usage_error("audit: --format table or json");
  if (args.files.empty()) throw usage_error("audit: no claims file");
  const input_files files = readable_inputs(args.files, err);
  std::vector<tc::audit_report> reports;
  for (const std::string& f : files.readable)
    for (const tc::claims& c : read_claims(f, err)) {
      tc::audit_report r = tc::audit(c);
      r.name = c.name;
      reports.push_back(std::move(r));
    }
  bool consistent = true;
  for (const auto& r : reports) consistent = consistent && r.consistent();
  if (format == "json") {
    nlohmann::ordered_json a = nlohmann::ordered_json::array();
    for (const auto& r : reports) a.push_back(tc::audit_json(r));
    nlohmann::ordered_json j;
    j["consistent"] = consistent;
    j["reports"] = std::move(a);
    if (!files.unreadable.empty()) j["unreadable_files"] = files.unreadable;
    out << j.dump(2) << '\n';
  } else {
    for (const auto& r : reports)
      out << r.name << ": " << (r.consistent() ? "consistent" : "INCONSISTENT") << '\n'
          << r.to_string() << '\n';
    out << (consistent ? "consistent\n" : "INCONSISTENT\n");
    for (const std::string& f : files.unreadable) out << "unreadable file: " << f << '\n';
  }
  if (!consistent) return exit_slo_fail;
  return files.unreadable.empty() ? exit_ok : exit_unreadable_files;
}

}  // namespace tokchron_report
