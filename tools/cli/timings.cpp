#include "timings.h"

#include <cstdlib>
#include <fstream>
#include <map>

#include "gitlocks/canon.hpp"

namespace gitlocks::cli::timings {
namespace {

using Clock = std::chrono::steady_clock;

struct State {
  bool on = false;
  bool done = false;
  std::string path;
  Clock::time_point started;
  std::map<std::string, Clock::duration> phases;
  Scope* current = nullptr;
};

State& state() {
  static State s = [] {
    State st;
    const char* p = std::getenv("GIT_LOCKS_TIMINGS");
    st.on = p && *p;
    if (st.on) st.path = p;
    return st;
  }();
  return s;
}

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// Forwards everything; times the calls that reach the repository.
class TimedStore : public ObjectStore {
 public:
  explicit TimedStore(std::unique_ptr<ObjectStore> inner) : inner_(std::move(inner)) {}
  Result<std::string> read_blob(const Oid& id) override {
    Scope s("object reads");
    return inner_->read_blob(id);
  }
  Result<Tree> read_tree(const Oid& id) override {
    Scope s("object reads");
    return inner_->read_tree(id);
  }
  Result<SharedTree> read_tree_shared(const Oid& id) override {
    Scope s("object reads");
    return inner_->read_tree_shared(id);
  }
  Result<Commit> read_commit(const Oid& id) override {
    Scope s("object reads");
    return inner_->read_commit(id);
  }
  Result<std::string> read_commit_raw(const Oid& id) override {
    Scope s("object reads");
    return inner_->read_commit_raw(id);
  }
  Result<std::vector<std::string>> changed_paths(const Oid& id) override {
    Scope s("object reads");
    return inner_->changed_paths(id);
  }
  Result<Oid> write_blob(std::string_view data) override {
    Scope s("object writes");
    return inner_->write_blob(data);
  }
  Result<Oid> write_tree(const Tree& tree) override {
    Scope s("object writes");
    return inner_->write_tree(tree);
  }
  Result<Oid> write_tree_owned(Tree&& tree) override {
    Scope s("object writes");
    return inner_->write_tree_owned(std::move(tree));
  }
  Result<Oid> write_commit(const Commit& commit) override {
    Scope s("object writes");
    return inner_->write_commit(commit);
  }
  std::shared_ptr<const json> parsed_blob(const Oid& id) override { return inner_->parsed_blob(id); }
  void keep_parsed(const Oid& id, const json& doc) override { inner_->keep_parsed(id, doc); }
  void keep_written_parse(const Oid& id, json doc) override { inner_->keep_written_parse(id, std::move(doc)); }
  bool has_object(const Oid& id) override {
    Scope s("object reads");
    return inner_->has_object(id);
  }
  Result<std::optional<Oid>> read_ref(std::string_view name) override {
    Scope s("object reads");
    return inner_->read_ref(name);
  }
  std::size_t objects_written() const override { return inner_->objects_written(); }
  void set_hash_only(bool on) override { inner_->set_hash_only(on); }

 private:
  std::unique_ptr<ObjectStore> inner_;
};

}  // namespace

bool enabled() { return state().on; }

void start() {
  if (enabled()) state().started = Clock::now();
}

void finish(const std::string& op) {
  State& s = state();
  if (!s.on || s.done) return;
  s.done = true;
  json phases = json::object();
  for (const auto& [name, d] : s.phases) phases[name] = ms(d);
  json line = {{"op", op}, {"total_ms", ms(Clock::now() - s.started)}, {"phases", phases}};
  std::ofstream(s.path, std::ios::app) << line.dump() << "\n";
}

Scope::Scope(const char* phase) : phase_(phase), parent_(nullptr), on_(enabled()) {
  if (!on_) return;
  parent_ = state().current;
  state().current = this;
  start_ = Clock::now();
}

Scope::~Scope() {
  if (!on_) return;
  const auto elapsed = Clock::now() - start_;
  state().phases[phase_] += elapsed - nested_;
  if (parent_) parent_->nested_ += elapsed;
  state().current = parent_;
}

std::unique_ptr<ObjectStore> timed(std::unique_ptr<ObjectStore> store) {
  if (!enabled()) return store;
  return std::make_unique<TimedStore>(std::move(store));
}

}  // namespace gitlocks::cli::timings
