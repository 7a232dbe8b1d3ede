#include "firstfault/signatures/loader.h"
#include "firstfault/util/safe_text.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "firstfault/attribution/line_attributor.h"
#include "firstfault/signatures/embedded.h"
#include "firstfault/signatures/snapshot.h"
#include "firstfault/util/huge_pages.h"
#include "firstfault/util/resident.h"
#include "firstfault/util/strings.h"

namespace firstfault {

const std::vector<std::string> kCategories = {"network", "collective-mismatch", "data-pipeline", "launcher",
                                              "hardware", "memory", "numerics", "software-env",
                                              "storage", "scheduler", "other"};
const std::vector<std::string> kSeverities = {"critical", "high", "medium", "low"};
const std::vector<std::string> kActionKinds = {"restart", "restart-excluding", "stop", "investigate"};

const char* action_kind_name(ActionKind k) { return kActionKinds[static_cast<size_t>(k)].c_str(); }

std::optional<ActionKind> parse_action_kind(std::string_view name) {
  auto it = std::find(kActionKinds.begin(), kActionKinds.end(), name);
  if (it == kActionKinds.end()) return std::nullopt;
  return static_cast<ActionKind>(it - kActionKinds.begin());
}

const char* role_name(Role r) {
  switch (r) {
    case Role::kRoot: return "root";
    case Role::kCascade: return "cascade";
    case Role::kTeardown: return "teardown";
    case Role::kContext: return "context";
  }
  return "context";
}

const Entry* Library::find_entry(const std::string& id) const {
  auto it = entry_index.find(id);
  return it == entry_index.end() ? nullptr : &entries[it->second];
}

std::optional<size_t> Library::find_pattern(const std::string& name) const {
  auto it = pattern_index.find(name);
  if (it == pattern_index.end()) return std::nullopt;
  return it->second;
}

std::string Override::format() const {
  // The path is the user's (as in LoadProblem::format): one inert line.
  std::string what = kind == "file" ? "file" : fmt::format("{} '{}'", kind, name);
  return safe_line(fmt::format("{}:{}:{}: note: {} overrides the built-in one ({})", loc.file, std::max(loc.line, 1),
                               std::max(loc.col, 1), what, builtin_file));
}

std::string LoadProblem::format() const {
  // A signature file's key names, values and path come from whoever wrote it: one inert line, so
  // an escape sequence in a key cannot restyle or rewrite the terminal that shows the error.
  if (loc.line > 0) return safe_line(fmt::format("{}:{}:{}: {}", loc.file, loc.line, loc.col, message));
  return safe_line(fmt::format("{}: {}", loc.file, message));
}

namespace {

// RE2 wants every group name once, so a pattern whose branches each capture the rank names them
// rank, rank2, rank3. A name that is another group's name plus digits is that group's value in
// another branch: it is stored under the plain name, so the rank, host or pid is read whatever
// branch matched (docs/signature-format.md, "Captures").
void merge_alternate_captures(std::vector<std::string>& names) {
  std::set<std::string> plain(names.begin(), names.end());
  for (std::string& n : names) {
    size_t end = n.size();
    while (end > 0 && n[end - 1] >= '0' && n[end - 1] <= '9') --end;
    if (end > 0 && end < n.size() && plain.count(n.substr(0, end))) n.resize(end);
  }
}


namespace fs = std::filesystem;

// Collects problems against one file; every helper takes the node it complains about so the
// message points at the exact line and column.
class FileChecker {
 public:
  FileChecker(const std::string& file, std::vector<LoadProblem>& problems) : file_(file), problems_(problems) {}

  SourceLoc loc(const YAML::Node& n) const {
    auto m = n.Mark();
    if (m.is_null()) return {file_, 0, 0};
    return {file_, m.line + 1, m.column + 1};
  }
  void error(const YAML::Node& n, const std::string& msg) {
    problems_.push_back({loc(n), msg});
    ++errors_;
  }
  void error_at(const SourceLoc& l, const std::string& msg) {
    problems_.push_back({l, msg});
    ++errors_;
  }
  size_t errors() const { return errors_; }

  void only_keys(const YAML::Node& map, std::initializer_list<const char*> allowed, const char* what) {
    for (auto it = map.begin(); it != map.end(); ++it) {
      std::string key = it->first.Scalar();
      bool ok = std::any_of(allowed.begin(), allowed.end(), [&](const char* a) { return key == a; });
      if (!ok) {
        std::string list;
        for (auto* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
        error(it->first, fmt::format("unknown key '{}' in {} (allowed: {})", key, what, list));
      }
    }
  }

  // The key itself: an empty value (`key:` or `key: # comment`) has no position of its own
  // (yaml-cpp marks the next token), so problems with it point at the key.
  static YAML::Node key_node(const YAML::Node& map, const char* key) {
    for (auto it = map.begin(); it != map.end(); ++it)
      if (it->first.IsScalar() && it->first.Scalar() == key) return it->first;
    return map;
  }

  std::string scalar(const YAML::Node& map, const char* key, bool required) {
    YAML::Node n = map[key];
    if (!n) {
      if (required) error(map, fmt::format("missing required key '{}'", key));
      return "";
    }
    if (!n.IsScalar()) {
      if (n.IsNull()) error(key_node(map, key), fmt::format("'{}' is empty (expected a string)", key));
      else error(n, fmt::format("'{}' must be a string", key));
      return "";
    }
    std::string v = n.Scalar();
    if (required && v.empty()) error(n, fmt::format("'{}' must not be empty", key));
    return v;
  }

  std::vector<std::string> list(const YAML::Node& map, const char* key, bool required) {
    std::vector<std::string> out;
    YAML::Node n = map[key];
    if (!n) {
      if (required) error(map, fmt::format("missing required key '{}'", key));
      return out;
    }
    if (!n.IsSequence()) {
      if (n.IsNull()) error(key_node(map, key), fmt::format("'{}' is empty (expected a list)", key));
      else error(n, fmt::format("'{}' must be a list", key));
      return out;
    }
    for (const auto& item : n) {
      if (!item.IsScalar()) {
        error(item, fmt::format("items of '{}' must be strings", key));
        continue;
      }
      out.push_back(item.Scalar());
    }
    if (required && out.empty()) error(n, fmt::format("'{}' must not be empty", key));
    return out;
  }

 private:
  std::string file_;
  std::vector<LoadProblem>& problems_;
  size_t errors_ = 0;
};

// True when `line`, as the pipeline would see it, matches `re` on its body.
bool sample_matches(const RE2& re, const std::string& line) {
  std::string scratch;
  bool hit = false;
  LineAttributor attributor;
  for_each_segment(line, scratch, [&](std::string_view seg) {
    if (hit) return;
    Attribution a = attributor.attribute(seg);
    hit = RE2::PartialMatch(re2::StringPiece(a.body.data(), a.body.size()), re);
  });
  return hit;
}

bool valid_name(const std::string& s, bool allow_dash) {
  if (s.empty()) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || (allow_dash && c == '-'))) return false;
  return true;
}

// Parses one pattern definition (shared or entry-local) from `node`.
bool parse_pattern_def(FileChecker& fc, const YAML::Node& node, const std::string& name, PatternDef& def,
                       const LoadOptions& options) {
  size_t before = fc.errors();
  def.name = name;
  def.loc = fc.loc(node);
  def.regex = fc.scalar(node, "regex", true);
  def.description = node["description"] ? fc.scalar(node, "description", false) : "";
  def.positive = fc.list(node, "positive", true);
  def.negative = fc.list(node, "negative", true);
  if (!def.regex.empty()) {
    def.re = LazyRegex(def.regex);
    if (!def.re) {  // compiled here, not on first use, so the problem has its file:line:col
      fc.error(node["regex"], fmt::format("invalid regex for pattern '{}': {}", name, def.re.error()));
      def.re = {};
    } else {
      def.capture_names.assign(static_cast<size_t>(def.re->NumberOfCapturingGroups()), "");
      for (const auto& [cap, idx] : def.re->NamedCapturingGroups())
        if (idx >= 1 && static_cast<size_t>(idx) <= def.capture_names.size()) def.capture_names[idx - 1] = cap;
      merge_alternate_captures(def.capture_names);
      if (options.check_samples) {
        YAML::Node pos = node["positive"], neg = node["negative"];
        for (size_t i = 0; i < def.positive.size(); ++i)
          if (!sample_matches(*def.re, def.positive[i]))
            fc.error(pos[i], fmt::format("pattern '{}' does not match its positive sample", name));
        for (size_t i = 0; i < def.negative.size(); ++i)
          if (sample_matches(*def.re, def.negative[i]))
            fc.error(neg[i], fmt::format("pattern '{}' matches its negative sample", name));
      }
    }
  }
  return fc.errors() == before;
}

// `action:` is required: an entry that does not say what a scheduler should do with the job
// leaves every caller of the JSON to guess.
ActionKind parse_entry_action(FileChecker& fc, const YAML::Node& root) {
  const char* kinds = "restart, restart-excluding, stop, investigate";
  if (!root["action"]) {
    fc.error(root, fmt::format("missing required key 'action' ({}: what a scheduler should do with a job that "
                               "failed this way)", kinds));
    return ActionKind::kInvestigate;
  }
  std::string name = fc.scalar(root, "action", true);
  auto kind = parse_action_kind(name);
  if (!kind && !name.empty()) fc.error(root["action"], fmt::format("unknown action '{}' ({})", name, kinds));
  return kind.value_or(ActionKind::kInvestigate);
}

std::optional<Role> parse_role(const std::string& s) {
  if (s == "root") return Role::kRoot;
  if (s == "cascade") return Role::kCascade;
  if (s == "teardown") return Role::kTeardown;
  if (s == "context") return Role::kContext;
  return std::nullopt;
}

struct PendingEntry {
  Entry entry;
  YAML::Node node;  // kept for second-pass (cross-reference) errors
  std::string file;
  std::vector<std::pair<YAML::Node, PatternDef>> local_defs;
  // Per ref, in ref order: a shared pattern by name, or the next of `local_defs`. The flag, not
  // an empty name, says which: `use:` with an empty value is an error, never a local pattern.
  struct Use {
    YAML::Node node;
    std::string shared;
    bool local = false;
  };
  std::vector<Use> uses;
  bool builtin = false;
};

struct PendingShared {
  PatternDef def;
  bool builtin = false;
};

}  // namespace

void collect_yaml_files(const std::string& dir, std::vector<SourceFile>& out, std::vector<LoadProblem>& problems) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    problems.push_back({{dir, 0, 0}, "not a directory"});
    return;
  }
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file() && (it->path().extension() == ".yaml" || it->path().extension() == ".yml"))
      files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) {
      problems.push_back({{f.string(), 0, 0}, "cannot read file"});
      continue;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    out.push_back({f.string(), ss.str(), false});
  }
}

std::vector<SourceFile> builtin_sources() {
  std::vector<SourceFile> out;
  for (const auto& f : embedded_signature_files()) out.push_back({f.path, std::string(f.text()), true});
  return out;
}

Library load_sources(const std::vector<SourceFile>& sources, std::vector<LoadProblem>& problems,
                     const LoadOptions& options) {
  std::vector<PendingShared> shared;
  std::vector<PendingEntry> pending;

  for (const auto& src : sources) {
    FileChecker fc(src.path, problems);
    YAML::Node root;
    try {
      root = YAML::Load(src.text);
    } catch (const YAML::Exception& e) {
      problems.push_back({{src.path, e.mark.line + 1, e.mark.column + 1}, "YAML syntax error: " + e.msg});
      continue;
    }
    if (!root.IsMap()) {
      problems.push_back({{src.path, 1, 1}, "expected a mapping (an entry with 'id', or a 'patterns' list)"});
      continue;
    }
    if (!root["id"]) {
      // A shared pattern file.
      fc.only_keys(root, {"patterns"}, "a shared pattern file");
      YAML::Node list = root["patterns"];
      if (!list || !list.IsSequence()) {
        fc.error(root, "a shared pattern file needs a 'patterns' list (or this entry is missing 'id')");
        continue;
      }
      for (const auto& p : list) {
        if (!p.IsMap()) {
          fc.error(p, "each pattern must be a mapping");
          continue;
        }
        fc.only_keys(p, {"name", "regex", "description", "positive", "negative"}, "a shared pattern");
        std::string name = fc.scalar(p, "name", true);
        if (!name.empty() && !valid_name(name, false)) fc.error(p["name"], "pattern names use [a-z0-9_]");
        PatternDef def;
        parse_pattern_def(fc, p, name, def, options);
        shared.push_back({std::move(def), src.builtin});
      }
      continue;
    }

    PendingEntry pe;
    pe.node = root;
    pe.file = src.path;
    pe.builtin = src.builtin;
    Entry& e = pe.entry;
    e.loc = fc.loc(root);
    e.loc.file = src.path;
    fc.only_keys(root,
                 {"id", "title", "category", "severity", "action", "systems", "patterns", "match", "specializes", "explains", "scope",
                  "ends_job_from_outside",
                  "root_cause", "confirm", "fix", "prevention", "references", "related", "examples"},
                 "an entry");
    e.id = fc.scalar(root, "id", true);
    if (!e.id.empty() && !valid_name(e.id, true)) fc.error(root["id"], "ids use [a-z0-9-]");
    std::string stem = fs::path(src.path).stem().string();
    if (!e.id.empty() && stem != e.id) fc.error(root["id"], fmt::format("id '{}' differs from the file name '{}'", e.id, stem));
    e.title = fc.scalar(root, "title", true);
    e.category = fc.scalar(root, "category", true);
    if (!e.category.empty() && std::find(kCategories.begin(), kCategories.end(), e.category) == kCategories.end())
      fc.error(root["category"], fmt::format("unknown category '{}'", e.category));
    std::string parent = fs::path(src.path).parent_path().filename().string();
    if (!e.category.empty() && parent != e.category && parent != "signatures")
      fc.error(root["category"], fmt::format("category '{}' but the file is in folder '{}'", e.category, parent));
    e.severity = fc.scalar(root, "severity", true);
    if (!e.severity.empty() && std::find(kSeverities.begin(), kSeverities.end(), e.severity) == kSeverities.end())
      fc.error(root["severity"], fmt::format("unknown severity '{}' (critical, high, medium, low)", e.severity));
    e.systems = fc.list(root, "systems", false);
    e.root_cause = fc.scalar(root, "root_cause", true);
    e.fix = fc.scalar(root, "fix", true);
    e.confirm = fc.list(root, "confirm", true);
    e.prevention = fc.list(root, "prevention", true);
    e.references = fc.list(root, "references", true);
    for (size_t i = 0; i < e.references.size(); ++i)
      if (!starts_with(e.references[i], "https://") && !starts_with(e.references[i], "http://"))
        fc.error(root["references"][i], "references must be URLs");
    e.related = fc.list(root, "related", false);
    e.specializes = fc.list(root, "specializes", false);
    e.explains = fc.list(root, "explains", false);
    std::string scope = fc.scalar(root, "scope", false);
    if (!scope.empty() && scope != "job" && scope != "rank")
      fc.error(root["scope"], fmt::format("unknown scope '{}' (rank, job)", scope));
    e.job_scope = scope == "job";
    std::string ends = fc.scalar(root, "ends_job_from_outside", false);
    if (!ends.empty() && ends != "true" && ends != "false")
      fc.error(root["ends_job_from_outside"], "ends_job_from_outside is true or false");
    e.ends_job_from_outside = ends == "true";
    e.action = parse_entry_action(fc, root);

    YAML::Node pats = root["patterns"];
    if (!pats || !pats.IsSequence() || pats.size() == 0) {
      fc.error(pats ? pats : root, "an entry needs a non-empty 'patterns' list");
    } else {
      std::set<std::string> names;
      for (const auto& p : pats) {
        if (!p.IsMap()) {
          fc.error(p, "each pattern must be a mapping");
          continue;
        }
        PatternRef ref;
        std::string role = fc.scalar(p, "role", true);
        auto r = parse_role(role);
        if (!role.empty() && !r) fc.error(p["role"], fmt::format("unknown role '{}' (root, cascade, teardown, context)", role));
        ref.role = r.value_or(Role::kContext);
        if (p["use"]) {
          fc.only_keys(p, {"use", "role", "name"}, "a pattern reference");
          std::string use = fc.scalar(p, "use", true);
          ref.name = p["name"] ? fc.scalar(p, "name", true) : use;
          pe.uses.push_back({p, use, false});
        } else {
          fc.only_keys(p, {"name", "role", "regex", "description", "positive", "negative"}, "a pattern");
          ref.name = fc.scalar(p, "name", true);
          if (!ref.name.empty() && !valid_name(ref.name, false)) fc.error(p["name"], "pattern names use [a-z0-9_]");
          PatternDef def;
          parse_pattern_def(fc, p, e.id + "/" + ref.name, def, options);
          pe.local_defs.push_back({p, std::move(def)});
          pe.uses.push_back({p, "", true});
        }
        if (!ref.name.empty() && !names.insert(ref.name).second)
          fc.error(p, fmt::format("pattern name '{}' used twice in this entry", ref.name));
        e.refs.push_back(ref);
      }
    }

    YAML::Node ex = root["examples"];
    if (!ex || !ex.IsSequence() || ex.size() == 0) {
      fc.error(ex ? ex : root, "an entry needs at least one example log under 'examples'");
    } else {
      for (const auto& x : ex) {
        if (!x.IsMap()) {
          fc.error(x, "each example must be a mapping with 'log' and 'initiating_rank'");
          continue;
        }
        fc.only_keys(x, {"log", "initiating_rank"}, "an example");
        Example example;
        example.log = fc.scalar(x, "log", true);
        YAML::Node r = x["initiating_rank"];
        if (!r) {
          fc.error(x, "missing required key 'initiating_rank' (an integer, or null)");
        } else if (!r.IsNull() && !(r.IsScalar() && (r.Scalar() == "null" || r.Scalar() == "~"))) {
          auto v = r.IsScalar() ? to_int(r.Scalar()) : std::nullopt;
          if (!v) fc.error(r, "initiating_rank must be an integer or null");
          else example.initiating_rank = static_cast<int>(*v);
        }
        e.examples.push_back(example);
      }
    }
    pending.push_back(std::move(pe));
  }

  // Resolve overrides: a later (non-built-in) definition replaces a built-in one of the same
  // name; two definitions from the same origin are a duplicate.
  Library lib;
  std::map<std::string, std::pair<size_t, bool>> seen_shared;  // name -> (index in shared, builtin)
  std::vector<bool> keep_shared(shared.size(), true);
  for (size_t i = 0; i < shared.size(); ++i) {
    const auto& s = shared[i];
    if (s.def.name.empty()) {
      keep_shared[i] = false;
      continue;
    }
    auto it = seen_shared.find(s.def.name);
    if (it != seen_shared.end()) {
      if (it->second.second == s.builtin) {
        problems.push_back({s.def.loc, fmt::format("duplicate shared pattern '{}' (first defined at {}:{})", s.def.name,
                                                   shared[it->second.first].def.loc.file,
                                                   shared[it->second.first].def.loc.line)});
        keep_shared[i] = false;
        continue;
      }
      keep_shared[it->second.first] = false;  // override
      lib.overrides.push_back({"shared pattern", s.def.name, s.def.loc, shared[it->second.first].def.loc.file});
    }
    seen_shared[s.def.name] = {i, s.builtin};
  }
  for (size_t i = 0; i < shared.size(); ++i) {
    if (!keep_shared[i]) continue;
    lib.pattern_index[shared[i].def.name] = lib.patterns.size();
    lib.patterns.push_back(std::move(shared[i].def));
  }

  std::map<std::string, std::pair<size_t, bool>> seen_ids;
  std::vector<bool> keep(pending.size(), true);
  for (size_t i = 0; i < pending.size(); ++i) {
    const auto& id = pending[i].entry.id;
    if (id.empty()) {
      keep[i] = false;
      continue;
    }
    auto it = seen_ids.find(id);
    if (it != seen_ids.end()) {
      if (it->second.second == pending[i].builtin) {
        problems.push_back({pending[i].entry.loc, fmt::format("duplicate id '{}' (also defined in {})", id,
                                                              pending[it->second.first].file)});
        keep[i] = false;
        continue;
      }
      keep[it->second.first] = false;  // override
      lib.overrides.push_back({"entry", id, pending[i].entry.loc, pending[it->second.first].file});
    }
    seen_ids[id] = {i, pending[i].builtin};
  }

  for (size_t i = 0; i < pending.size(); ++i) {
    if (!keep[i]) continue;
    PendingEntry& pe = pending[i];
    Entry& e = pe.entry;
    FileChecker fc(pe.file, problems);
    size_t local = 0;
    // A ref whose 'use' names no pattern stays unresolved (reported); nothing below may read its def.
    std::vector<bool> resolved(e.refs.size(), false);
    for (size_t r = 0; r < e.refs.size() && r < pe.uses.size(); ++r) {
      const auto& [node, use, is_local] = pe.uses[r];
      if (is_local) {
        PatternDef& def = pe.local_defs[local++].second;
        lib.pattern_index[def.name] = lib.patterns.size();
        e.refs[r].def = lib.patterns.size();
        lib.patterns.push_back(std::move(def));
        resolved[r] = true;
      } else if (!use.empty()) {  // empty: already reported as "'use' must not be empty"
        auto idx = lib.find_pattern(use);
        if (!idx) fc.error(node["use"], fmt::format("unknown shared pattern '{}'", use));
        else e.refs[r].def = *idx;
        resolved[r] = idx.has_value();
      }
    }
    // Match rule.
    auto ref_index = [&](const std::string& name) -> std::optional<size_t> {
      for (size_t k = 0; k < e.refs.size(); ++k)
        if (e.refs[k].name == name) return k;
      return std::nullopt;
    };
    YAML::Node m = pe.node["match"];
    if (m) {
      if (!m.IsMap()) {
        fc.error(m, "'match' must be a mapping");
      } else {
        fc.only_keys(m, {"require", "any", "boost", "penalize", "absent", "same_traceback", "fallback", "generic", "no_progress", "survivable",
                           "last_resort", "captures"},
                     "'match'");
        for (auto [key, flag] : {std::pair{"fallback", &e.match.fallback}, std::pair{"generic", &e.match.generic},
                                 std::pair{"no_progress", &e.match.no_progress},
                                 std::pair{"survivable", &e.match.survivable}})
          if (m[key]) {
            std::string f = fc.scalar(m, key, false);
            if (f != "true" && f != "false") fc.error(m[key], fmt::format("'{}' must be true or false", key));
            *flag = f == "true";
          }
        if (m["last_resort"]) {
          std::string level = fc.scalar(m, "last_resort", false);
          if (level.size() != 1 || level[0] < '1' || level[0] > '9')
            fc.error(m["last_resort"], "'last_resort' is a level from 1 (tried first) to 9");
          else e.match.last_resort = level[0] - '0';
          e.match.generic = true;  // it reads error lines only, like any generic entry
        }
        if (e.match.fallback && e.match.generic) fc.error(m["generic"], "an entry is either 'fallback' or 'generic', not both");
        auto names_to_refs = [&](const char* key, std::vector<size_t>& out) {
          for (const auto& n : fc.list(m, key, false)) {
            auto k = ref_index(n);
            if (!k) fc.error(m[key], fmt::format("'{}' names unknown pattern '{}'", key, n));
            else out.push_back(*k);
          }
        };
        names_to_refs("require", e.match.require);
        names_to_refs("any", e.match.any);
        names_to_refs("boost", e.match.boost);
        names_to_refs("penalize", e.match.penalize);
        names_to_refs("absent", e.match.absent);
        names_to_refs("same_traceback", e.match.same_traceback);
        YAML::Node caps = m["captures"];
        if (caps) {
          if (!caps.IsMap()) fc.error(caps, "'captures' maps pattern names to {capture: regex}");
          for (auto it = caps.begin(); caps.IsMap() && it != caps.end(); ++it) {
            auto k = ref_index(it->first.Scalar());
            if (!k) {
              fc.error(it->first, fmt::format("captures names unknown pattern '{}'", it->first.Scalar()));
              continue;
            }
            if (!it->second.IsMap()) {
              fc.error(it->second, "expected {capture: regex}");
              continue;
            }
            if (!resolved[*k]) continue;  // its unknown pattern is reported already
            for (auto c = it->second.begin(); c != it->second.end(); ++c) {
              CaptureRule rule;
              rule.ref = *k;
              rule.capture = c->first.Scalar();
              const PatternDef& def = lib.patterns[e.refs[*k].def];
              if (def.re && std::find(def.capture_names.begin(), def.capture_names.end(), rule.capture) ==
                                def.capture_names.end())
                fc.error(c->first, fmt::format("pattern '{}' has no capture named '{}'", it->first.Scalar(), rule.capture));
              rule.re = LazyRegex("^(?:" + c->second.Scalar() + ")$");
              if (!rule.re) fc.error(c->second, "invalid regex: " + rule.re.error());  // compiled now, as above
              else e.match.captures.push_back(rule);
            }
          }
        }
      }
    }
    if (e.match.require.empty() && e.match.any.empty()) {
      for (size_t k = 0; k < e.refs.size(); ++k)
        if (e.refs[k].role == Role::kRoot) e.match.any.push_back(k);
      if (e.match.any.empty())
        for (size_t k = 0; k < e.refs.size(); ++k)
          if (e.refs[k].role == Role::kCascade) e.match.any.push_back(k);
      e.match.require_is_default = true;
    }
    bool has_signal = std::any_of(e.refs.begin(), e.refs.end(),
                                  [](const PatternRef& r) { return r.role == Role::kRoot || r.role == Role::kCascade; });
    if (!e.refs.empty() && !has_signal && !e.match.fallback)
      fc.error(pe.node["patterns"], "an entry needs at least one root or cascade pattern");
    lib.entry_index[e.id] = lib.entries.size();
    lib.entries.push_back(std::move(e));
  }

  // Cross-references.
  for (size_t i = 0, j = 0; i < pending.size(); ++i) {
    if (!keep[i]) continue;
    const Entry& e = lib.entries[j++];
    FileChecker fc(pending[i].file, problems);
    for (size_t k = 0; k < e.related.size(); ++k)
      if (!lib.find_entry(e.related[k])) fc.error(pending[i].node["related"][k], fmt::format("related id '{}' does not exist", e.related[k]));
    for (size_t k = 0; k < e.specializes.size(); ++k) {
      if (!lib.find_entry(e.specializes[k]))
        fc.error(pending[i].node["specializes"][k], fmt::format("specializes id '{}' does not exist", e.specializes[k]));
      else if (e.specializes[k] == e.id)
        fc.error(pending[i].node["specializes"][k], "an entry cannot specialize itself");
    }
    for (size_t k = 0; k < e.explains.size(); ++k) {
      if (!lib.find_entry(e.explains[k]))
        fc.error(pending[i].node["explains"][k], fmt::format("explains id '{}' does not exist", e.explains[k]));
      else if (e.explains[k] == e.id)
        fc.error(pending[i].node["explains"][k], "an entry cannot explain itself");
    }
  }
  return lib;
}

namespace {
void drop_samples(Library& lib) {
  for (PatternDef& p : lib.patterns) {
    std::string().swap(p.description);
    std::vector<std::string>().swap(p.positive);
    std::vector<std::string>().swap(p.negative);
  }
}
}  // namespace

Library load_library(const std::vector<std::string>& extra_dirs, std::vector<LoadProblem>& problems,
                     const LoadOptions& options, bool include_builtin) {
  // The built-ins alone come from the snapshot the build validated (samples included). A caller
  // checking samples is validating (`check`), so it gets the YAML; so does a stale or bad snapshot.
  if (extra_dirs.empty() && include_builtin && !options.check_samples) {
    // The library takes ~1.3x the snapshot on the heap, the matcher built from it ~0.6x more.
    reserve_heap_on_huge_pages(2 * builtin_snapshot().size());
    if (auto lib = deserialize_library(builtin_snapshot(), builtin_source_key(), options.keep_samples)) {
      drop_embedded_pages(builtin_snapshot());  // copied into `lib`; not read again
      return std::move(*lib);
    }
  }
  // A file under an extra directory with the same relative path as a built-in file replaces
  // it whole (so `check signatures/` validates the working copy, not the embedded copy too).
  std::vector<SourceFile> extra;
  std::map<std::string, size_t> replaced;  // built-in path -> index in `extra`
  for (const auto& d : extra_dirs) {
    size_t before = extra.size();
    collect_yaml_files(d, extra, problems);
    for (size_t i = before; i < extra.size(); ++i)
      replaced["signatures/" + fs::relative(extra[i].path, d).generic_string()] = i;
  }
  std::vector<SourceFile> sources;
  std::vector<std::pair<std::string, std::string>> changed;  // (replacement path, built-in path)
  if (include_builtin)
    for (auto& b : builtin_sources()) {
      auto it = replaced.find(b.path);
      if (it == replaced.end()) sources.push_back(std::move(b));
      else if (extra[it->second].text != b.text) changed.push_back({extra[it->second].path, b.path});
      // An identical copy (the working tree's own signatures/) replaces nothing worth a note.
    }
  for (auto& x : extra) sources.push_back(std::move(x));
  Library lib = load_sources(sources, problems, options);
  // A replaced file is announced per entry it defines, or as a file (shared patterns).
  std::vector<Override> notes;
  for (const auto& [path, builtin] : changed) {
    size_t before = notes.size();
    for (const Entry& e : lib.entries)
      if (e.loc.file == path) notes.push_back({"entry", e.id, e.loc, builtin});
    if (notes.size() == before) {
      Override ov;
      ov.kind = "file";
      ov.name = builtin;
      ov.loc.file = path;
      ov.loc.line = ov.loc.col = 1;
      ov.builtin_file = builtin;
      notes.push_back(std::move(ov));
    }
  }
  lib.overrides.insert(lib.overrides.begin(), notes.begin(), notes.end());
  if (!options.keep_samples) drop_samples(lib);  // checked above when asked; not read again
  return lib;
}

}  // namespace firstfault
