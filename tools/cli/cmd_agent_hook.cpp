// Claim on first edit, for coding agents (docs/CLI.md "Claim on first edit
// (coding agents)"):
// - hook install --agent claude-code merges a PreToolUse hook on
//   Edit|Write|MultiEdit into the work tree's .claude/settings.json, keeping
//   everything else the file holds;
// - hook agent --agent claude-code is what that hook runs: it reads the
//   host's request (JSON) on stdin, claims the file about to be edited for
//   the actor's key, or extends the actor's lease on it (or on a directory
//   above it), and blocks the edit when that is refused.
//
// Claude Code blocks a tool call only when its PreToolUse hook exits 2 (the
// hook's stderr is the reason the agent reads); any other non-zero status is
// a "non-blocking error" and the edit goes ahead. So once the command line
// is parsed, every failure here exits 2: a refusal, a store that cannot be
// read or verified, a key that cannot be loaded, a request that cannot be
// read. The error line on stderr keeps its kind and code.
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli.h"
#include "fsio.h"
#include "gitlocks/limits.hpp"
#include "gitlocks/ops.hpp"
#include "gitlocks/path.hpp"
#include "gitlocks/query.hpp"
#include "gitlocks/state.hpp"
#include "hooks.h"
#include "identity.h"
#include "leases.h"
#include "publish.h"
#include "report.h"

namespace gitlocks::cli {
namespace {

namespace fs = std::filesystem;

// The only status with which Claude Code's PreToolUse hook blocks the call.
constexpr int kExitBlocked = 2;
// The request is read whole before anything is decided: at most this many
// bytes (a Write carries the whole new file), within this time (the host
// writes it and closes stdin before it waits for the hook).
constexpr std::size_t kMaxRequestBytes = 8 * 1024 * 1024;
constexpr int kRequestWaitMs = 5000;

// An agent host git-locks knows how to hook.
struct AgentHost {
  std::string_view name;      // --agent NAME
  std::string_view settings;  // its project settings, from the work tree's top
  std::string_view event;     // the hook event that runs before a tool call
  std::string_view matcher;   // the tools that edit a file
};
constexpr AgentHost kHosts[] = {
    {"claude-code", ".claude/settings.json", "PreToolUse", "Edit|Write|MultiEdit"},
};
// How an installed entry is recognised as ours (every host's command has it).
constexpr std::string_view kOurCommand = " hook agent --agent ";

Result<const AgentHost*> host_named(const std::string& name) {
  std::string known;
  for (const auto& h : kHosts) {
    if (h.name == name) return &h;
    known += (known.empty() ? "" : ", ") + std::string(h.name);
  }
  return make_error(Errc::usage, "unknown agent '" + name + "' (known: " + known + ")");
}

// The tools of `host` whose file_path names the file they change.
bool is_edit_tool(const AgentHost& host, const std::string& tool) {
  for (std::string_view t : split_fields(host.matcher, '|'))
    if (t == tool) return true;
  return false;
}

Result<std::int64_t> ttl_of(const Parsed& a) {
  if (auto t = a.value("ttl")) return parse_duration(*t);
  return kDefaultTtlMs;
}

// The work tree's top directory (git rev-parse --show-toplevel). Errors:
// usage when there is none (a bare repository), store_read when git fails.
Result<fs::path> work_tree_top(Context& ctx) {
  GITLOCKS_TRY(r, ctx.git().run({"rev-parse", "--show-toplevel"}));
  if (r.status != 0) return make_error(Errc::usage, "not in a Git work tree: " + r.err);
  const std::string top = r.out.substr(0, r.out.find('\n'));
  if (top.empty()) return make_error(Errc::usage, "not in a Git work tree (a bare repository)");
  return fs::path(top);
}

// ---------------------------------------------------------------------------
// hook install --agent: the settings file, merged.

using ordered = nlohmann::ordered_json;

// Whether one hook of a settings entry is ours.
bool is_our_hook(const ordered& hook) {
  if (!hook.is_object()) return false;
  auto c = hook.find("command");
  return c != hook.end() && c->is_string() && c->get<std::string>().find(kOurCommand) != std::string::npos;
}

// `doc` with our entry in `event`'s list: in place of the hooks of ours it
// had (an entry left with no hook is dropped, one with other hooks keeps
// them), else at the end. Everything else stays as it was, in its order.
// Sets `replaced` when ours was there. Errors: bad_json for a `hooks` that
// is not an object or an event list that is not an array.
Status merge_entry(ordered& doc, const AgentHost& host, const ordered& entry, const std::string& file, bool& replaced) {
  const std::string event(host.event);
  auto wrong = [&](const std::string& member, const char* want) {
    return Error(
        Errc::bad_json,
        file + ": \"" + member + "\" is not " + want + "; the file is left as it is (fix it, or --force to replace it)",
        {{"file", file}, {"member", member}});
  };
  if (doc.contains("hooks") && !doc["hooks"].is_object()) return wrong("hooks", "an object");
  ordered& hooks = doc["hooks"];
  if (hooks.is_null()) hooks = ordered::object();
  if (hooks.contains(event) && !hooks[event].is_array()) return wrong("hooks." + event, "an array");
  ordered& list = hooks[event];
  if (list.is_null()) list = ordered::array();
  ordered kept = ordered::array();
  std::optional<std::size_t> at;
  for (ordered e : list) {
    auto hs = e.is_object() ? e.find("hooks") : e.end();
    if (e.is_object() && hs != e.end() && hs->is_array()) {
      ordered others = ordered::array();
      for (const auto& h : *hs)
        if (!is_our_hook(h)) others.push_back(h);
      if (others.size() != hs->size()) {
        replaced = true;
        if (!at) at = kept.size();
        if (others.empty()) continue;
        *hs = std::move(others);
      }
    }
    kept.push_back(std::move(e));
  }
  kept.insert(kept.begin() + static_cast<std::ptrdiff_t>(at.value_or(kept.size())), entry);
  list = std::move(kept);
  return Ok{};
}

// The file's contents, nullopt when it does not exist. Errors: store_read.
Result<std::optional<std::string>> read_if_exists(const fs::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::optional<std::string>{};
    return make_error(Errc::store_read, fsio::errno_message("stat", file.string()));
  }
  std::ifstream in(file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in) return make_error(Errc::store_read, fsio::errno_message("read", file.string()));
  return std::optional<std::string>{ss.str()};
}

}  // namespace

int install_agent_hook(Context& ctx, const Parsed& a, const std::string& exe) {
  auto host = host_named(*a.value("agent"));
  if (!host.ok()) return ctx.fail(host.error());
  for (const char* other : {"server", "warn", "no-sign"})
    if (a.has(other))
      return ctx.fail(make_error(Errc::usage, std::string("--") + other +
                                                  " is for Git's hooks; --agent installs only the agent host's "
                                                  "pre-edit hook (run hook install again without --agent for "
                                                  "those)"));
  auto ttl = ttl_of(a);
  if (!ttl.ok()) return ctx.fail(ttl.error());
  auto top = work_tree_top(ctx);
  if (!top.ok()) return ctx.fail(top.error().prefixed("hook install --agent: "));
  const fs::path settings = *top / fs::path(std::string((*host)->settings));
  // A settings file that is a symbolic link (a dotfiles checkout) is
  // updated where it points.
  std::error_code ec;
  struct stat link {};
  fs::path target = settings;
  if (::lstat(settings.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) target = fs::weakly_canonical(settings, ec);
  if (ec) return ctx.fail(make_error(Errc::store_read, "cannot resolve " + settings.string() + ": " + ec.message()));
  const std::string file = target.string();
  auto old = read_if_exists(target);
  if (!old.ok()) return ctx.fail(old.error());

  // The command the host runs: this binary, in the project's repository
  // ($CLAUDE_PROJECT_DIR: the directory whose settings these are), with
  // the key and store chosen now, if any.
  const std::string name((*host)->name), event((*host)->event), matcher((*host)->matcher);
  std::string command = shell_quote(exe) + " --repo \"$CLAUDE_PROJECT_DIR\" hook agent --agent " + name;
  if (auto t = a.value("ttl")) command += " --ttl " + shell_quote(*t);
  if (ctx.key_flag) command += " --key " + shell_quote(fs::absolute(*ctx.key_flag).string());
  if (ctx.remote_flag) command += " --remote " + shell_quote(*ctx.remote_flag);
  const ordered entry = {{"matcher", matcher}, {"hooks", {{{"type", "command"}, {"command", command}}}}};

  ordered doc = ordered::object();
  std::optional<std::string> backup;
  bool replaced = false;
  Status merged = Ok{};
  if (*old && (*old)->find_first_not_of(" \t\r\n") != std::string::npos) {
    doc = ordered::parse(**old, nullptr, false);
    if (doc.is_discarded())
      merged = Error(Errc::bad_json,
                     file + " is not valid JSON; the file is left as it is (fix it, or --force to replace it)",
                     {{"file", file}});
    else if (!doc.is_object())
      merged = Error(Errc::bad_json,
                     file +
                         ": the settings are not a JSON object; the file is left as it is (fix it, or "
                         "--force to replace it)",
                     {{"file", file}});
    else merged = merge_entry(doc, **host, entry, file, replaced);
  } else {
    merged = merge_entry(doc, **host, entry, file, replaced);
  }
  if (!merged.ok()) {
    if (!a.has("force")) return ctx.fail(merged.error());
    // --force: the old bytes are kept beside it, and the file starts anew.
    backup = file + ".bak";
    if (auto failed = fsio::write_file(*backup, **old))
      return ctx.fail(make_error(Errc::store_write, fsio::message(*failed, *backup)));
    doc = ordered::object();
    replaced = false;
    if (auto again = merge_entry(doc, **host, entry, file, replaced); !again.ok()) return ctx.fail(again.error());
  }
  const std::string text = doc.dump(2, ' ', false, ordered::error_handler_t::replace) + "\n";
  const bool unchanged = *old && **old == text;
  if (!unchanged) {
    fs::create_directories(target.parent_path(), ec);
    if (ec)
      return ctx.fail(
          make_error(Errc::store_write, "cannot create " + target.parent_path().string() + ": " + ec.message()));
    struct stat st {};
    const mode_t mode = *old && ::stat(file.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0644;
    if (auto failed = fsio::write_file(file, text, {mode}))
      return ctx.fail(make_error(Errc::store_write, fsio::message(*failed, file)));
  }
  json out = {{"op", "hook install"}, {"agent", name},         {"hooks", json::array({file})},
              {"settings", file},     {"event", event},        {"matcher", matcher},
              {"command", command},   {"ttl_ms", *ttl},        {"created", !*old},
              {"replaced", replaced}, {"changed", !unchanged}, {"backup", backup ? json(*backup) : json(nullptr)}};
  std::string human = std::string(unchanged  ? "already installed"
                                  : replaced ? "updated"
                                             : "installed") +
                      " the " + name + " pre-edit hook in " + file + " (" + event + ", matcher " + matcher + "):\n  " +
                      command + "\nan edit claims the file for the hook's key (exclusive, " + format_duration(*ttl) +
                      "), or extends its lease; an edit of a file another holder claimed is blocked";
  if (backup) human += "\nthe unreadable settings were kept as " + *backup;
  return ctx.done(out, human);
}

// ---------------------------------------------------------------------------
// hook agent: the request, decided.

namespace {

// stdin, whole: at most kMaxRequestBytes, within kRequestWaitMs. Errors:
// usage (too large, not closed in time), store_read (stdin unreadable).
Result<std::string> read_request() {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::milliseconds(kRequestWaitMs);
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
    if (left <= 0)
      return make_error(Errc::usage, "no complete request on stdin within " + format_duration(kRequestWaitMs) +
                                         " (the host writes it and closes stdin)");
    pollfd p{STDIN_FILENO, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno != EINTR) return make_error(Errc::store_read, fsio::errno_message("poll", "stdin"));
    if (ready <= 0) continue;
    const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return make_error(Errc::store_read, fsio::errno_message("read", "stdin"));
    }
    if (n == 0) return out;
    if (out.size() + static_cast<std::size_t>(n) > kMaxRequestBytes)
      return make_error(Errc::usage,
                        "the request on stdin is larger than " + std::to_string(kMaxRequestBytes) + " bytes");
    out.append(buf, static_cast<std::size_t>(n));
  }
}

// What the host asks about: the file an edit tool is about to change.
struct EditRequest {
  std::string tool;
  std::string file;  // as the host spelled it: absolute, or relative to cwd
  std::string cwd;   // "" when the host sent none
};

// The edit in a request, nullopt when the request is not one (another
// event, another tool: nothing to claim). Errors: bad_json.
Result<std::optional<EditRequest>> edit_of(const AgentHost& host, const std::string& text) {
  const json req = json::parse(text, nullptr, false);
  if (req.is_discarded() || !req.is_object())
    return make_error(Errc::bad_json, "the request on stdin is not a JSON object");
  if (req.contains("hook_event_name") && !member_is(req, "hook_event_name", host.event))
    return std::optional<EditRequest>{};
  auto tool = get_string(req, "tool_name");
  if (!tool.ok()) return tool.error().prefixed("the request on stdin: ");
  if (!is_edit_tool(host, *tool)) return std::optional<EditRequest>{};
  auto input = req.find("tool_input");
  if (input == req.end() || !input->is_object())
    return make_error(Errc::bad_json, "the request on stdin: tool_input is not an object");
  auto file = get_string(*input, "file_path");
  if (!file.ok()) return file.error().prefixed("the request on stdin: tool_input: ");
  if (file->empty()) return make_error(Errc::bad_json, "the request on stdin: tool_input.file_path is empty");
  EditRequest edit{*tool, *file, string_member(req, "cwd")};
  return std::optional<EditRequest>{std::move(edit)};
}

// `p` with every symbolic link resolved, a dangling one too (an edit
// creates the file it points to), and "." and ".." removed.
fs::path resolved(fs::path p, std::error_code& ec) {
  for (int hops = 0; hops < 40; ++hops) {
    p = fs::weakly_canonical(p, ec);  // every link that leads somewhere
    struct stat st {};
    if (ec || ::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) return p;
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  ec = std::make_error_code(std::errc::too_many_symbolic_link_levels);
  return p;
}

// Where the file lies: its absolute path with symbolic links resolved (an
// edit writes through them), and its path in the work tree `top`, or why it
// has none ("outside-repository", "git-directory"). Errors: store_read.
struct Located {
  std::string file;
  std::string path;
  std::string skipped;
};
Result<Located> locate(const fs::path& top, const EditRequest& edit) {
  std::error_code ec;
  fs::path p(edit.file);
  if (p.is_relative()) p = (edit.cwd.empty() ? fs::current_path(ec) : fs::absolute(edit.cwd, ec)) / p;
  if (!ec) p = resolved(p, ec);
  if (ec) return make_error(Errc::store_read, "cannot resolve " + edit.file + ": " + ec.message());
  const fs::path root = fs::weakly_canonical(top, ec);
  if (ec) return make_error(Errc::store_read, "cannot resolve " + top.string() + ": " + ec.message());
  Located out{p.string(), "", ""};
  const fs::path rel = p.lexically_relative(root);
  if (rel.empty() || rel == "." || *rel.begin() == "..") {
    out.skipped = "outside-repository";
    return out;
  }
  for (const auto& part : rel)
    if (part == ".git") {
      out.skipped = "git-directory";
      return out;
    }
  out.path = rel.generic_string();
  return out;
}

// The leases of `actor` that cover `path` (the path's own, or a directory
// above it), live at `now`: the core's listing, read as typed leases.
Result<std::vector<Lease>> own_covering(ObjectStore& store, const Snapshot& snap, std::int64_t now,
                                        const RepoPath& path, const std::string& actor) {
  StateReader reader(store, snap.state, snap.codec());
  GITLOCKS_TRY(listed, listed_leases(reader, now, {path}, false));
  std::vector<std::string> covering = proper_ancestors(path);
  covering.push_back(path.key());
  std::vector<Lease> out;
  for (auto& l : listed)
    // An intent covers nothing: it locks nothing (docs/FORMAT.md "Intent").
    if (l.resource.kind == RecordKind::path && l.lease.holder == actor && !l.lease.intent() &&
        std::find(covering.begin(), covering.end(), l.resource.name) != covering.end())
      out.push_back(std::move(l.lease));
  return out;
}

json leases_json(const std::vector<Lease>& leases) {
  json out = json::array();
  for (const auto& l : leases)
    out.push_back({{"lease", l.id}, {"path", l.path}, {"mode", l.mode}, {"expires_at", l.expires_at}});
  return out;
}

}  // namespace

int cmd_hook_agent(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  auto host = host_named(*a->value("agent"));  // required (commands.cpp)
  if (!host.ok()) return ctx.fail(host.error());
  auto ttl = ttl_of(*a);
  if (!ttl.ok()) return ctx.fail(ttl.error());
  // From here on the edit is blocked unless it was decided that it may go.
  auto block = [&](const Error& e) {
    (void)ctx.fail(e);
    return kExitBlocked;
  };
  auto text = read_request();
  if (!text.ok()) return block(text.error());
  auto edit = edit_of(**host, *text);
  if (!edit.ok()) return block(edit.error());
  auto skip = [&](const std::string& why, const json& file, const json& path, const std::string& human) {
    return ctx.done({{"op", ctx.op}, {"commit", nullptr}, {"file", file}, {"path", path}, {"skipped", why}}, human);
  };
  if (!*edit) return skip("not-an-edit", nullptr, nullptr, "");
  // The repository: --repo, else the one around the host's working directory.
  if (!ctx.repo_dir && !(*edit)->cwd.empty()) ctx.repo_dir = (*edit)->cwd;
  auto top = work_tree_top(ctx);
  if (!top.ok()) return block(top.error());
  auto where = locate(*top, **edit);
  if (!where.ok()) return block(where.error());
  if (!where->skipped.empty())
    return skip(where->skipped, where->file, nullptr,
                "nothing claimed: " + where->file +
                    (where->skipped == "git-directory" ? " is in a Git directory"
                                                       : " is outside the work tree " + top->string()));
  auto me = ctx.identity();
  if (!me.ok()) return block(me.error());
  auto store = ctx.store();
  if (!store.ok()) return block(store.error());
  const std::string actor = (*me)->actor;
  // Per snapshot: extend the actor's leases that cover the file (those that
  // would expire before now + TTL), else claim it exclusive.
  bool no_store = false;
  std::string path = where->path;
  std::vector<Lease> mine;
  auto p = publish(ctx, ctx.op, [&](const Snapshot& snap, std::int64_t now) -> Result<std::optional<json>> {
    no_store = !snap.commit;
    mine.clear();
    if (no_store) return std::optional<json>{};
    GITLOCKS_TRY(canonical, normalize_path_input(where->path, snap.path_case()));
    GITLOCKS_TRY(rp, parse_repo_path(canonical, snap.path_case()));
    path = canonical;
    GITLOCKS_TRY(own, own_covering(**store, snap, now, rp, actor));
    mine = std::move(own);
    json ops = json::array();
    for (const Lease& l : mine)
      if (l.expires_at < now + *ttl)
        ops.push_back(ops::extend_to(ops::extend(ops::Target::path(l.path), l.id), now + *ttl));
    if (mine.empty()) ops.push_back(ops::claim(canonical, ops::Mode::exclusive, now + *ttl));
    if (ops.empty()) return std::optional<json>{};
    return std::optional<json>{transition_body(ctx, now, ops)};
  });
  if (!p.ok()) return block(p.error());
  if (no_store) return skip("no-store", where->file, path, "nothing claimed: " + no_store_message(ctx));
  // Others' intents on the file: warnings, never a block (docs/FORMAT.md "Intent").
  const auto clock = now_ms();
  const Intents near = clock.ok() ? intents_near(**store, p->source, *clock, {path}, actor) : Intents{};
  if (!p->candidate) {
    json out = {{"op", ctx.op},      {"commit", nullptr},           {"file", where->file}, {"path", path},
                {"skipped", "held"}, {"leases", leases_json(mine)}, {"intents", near.list}};
    std::string human =
        "nothing to do: your lease covering " + path + " runs at least " + format_duration(*ttl) + " more";
    for (const auto& w : near.warnings) human += "\nwarning: " + w;
    return ctx.done(out, human);
  }
  return report_published(ctx, *p, {{"file", where->file}, {"path", path}, {"intents", near.list}}, near.warnings);
}

}  // namespace gitlocks::cli
