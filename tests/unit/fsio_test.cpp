// The one durable-write helper of the CLI and the notary (tools/common/fsio.h).
#include "fsio.h"

#include <dirent.h>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace gitlocks::fsio;

namespace {
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/gitlocks-fsio-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    DIR* d = ::opendir(path.c_str());
    while (dirent* e = ::readdir(d))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") out.push_back(e->d_name);
    ::closedir(d);
    return out;
  }
};

std::string slurp(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

unsigned mode_of(const std::string& p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}
}  // namespace

TEST_CASE("fsio: a write replaces the file whole with exactly the mode asked - whatever the umask") {
  TempDir dir;
  const std::string file = dir.path + "/record.json";
  const mode_t old = ::umask(077);
  auto first = write_file(file, "one\n", {0644});
  auto second = write_file(file, "two\n", {0644});
  ::umask(old);
  CHECK_FALSE(first.has_value());
  CHECK_FALSE(second.has_value());
  CHECK(slurp(file) == "two\n");
  CHECK(mode_of(file) == 0644);
  CHECK(dir.names() == std::vector<std::string>{"record.json"});  // no temporary file left
  CHECK_FALSE(write_file(file, "key\n", {0600}).has_value());
  CHECK(mode_of(file) == 0600);
}

TEST_CASE("fsio: Replace never keeps an existing file and reports EEXIST from link") {
  TempDir dir;
  const std::string file = dir.path + "/service.key";
  REQUIRE_FALSE(write_file(file, "first\n", {0600, Sync::durable, Replace::never}).has_value());
  auto again = write_file(file, "second\n", {0600, Sync::durable, Replace::never});
  REQUIRE(again.has_value());
  CHECK(again->err == EEXIST);
  CHECK(again->step == "link");
  CHECK(slurp(file) == "first\n");
  CHECK(dir.names() == std::vector<std::string>{"service.key"});
  CHECK(message(*again, file) == "cannot link " + file + ": File exists");
}

TEST_CASE("fsio: a failed write leaves what was there before and no temporary file") {
  TempDir dir;
  auto missing = write_file(dir.path + "/no/such/dir/file", "x", {});
  REQUIRE(missing.has_value());
  CHECK(missing->err == ENOENT);
  CHECK(missing->step == "open the directory of");
  // The target is a non-empty directory: the rename fails.
  const std::string target = dir.path + "/taken";
  REQUIRE(::mkdir(target.c_str(), 0755) == 0);
  REQUIRE_FALSE(write_file(target + "/inner", "x", {}).has_value());
  auto onto_dir = write_file(target, "x", {});
  REQUIRE(onto_dir.has_value());
  CHECK(onto_dir->step == "rename");
  CHECK(dir.names() == std::vector<std::string>{"taken"});
  auto empty_name = write_file(dir.path + "/", "x", {});
  REQUIRE(empty_name.has_value());
  CHECK(empty_name->step == "create");
}

TEST_CASE("fsio: write_file_at writes inside an open directory") {
  TempDir dir;
  const int fd = ::open(dir.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  CHECK_FALSE(write_file_at(fd, "high-water.json", "{\"t\":1}\n", {0600}).has_value());
  CHECK_FALSE(write_file_at(fd, "high-water.json", "{\"t\":2}\n", {0600, Sync::none}).has_value());
  ::close(fd);
  CHECK(slurp(dir.path + "/high-water.json") == "{\"t\":2}\n");
  CHECK(mode_of(dir.path + "/high-water.json") == 0600);
  CHECK(dir.names() == std::vector<std::string>{"high-water.json"});
}
