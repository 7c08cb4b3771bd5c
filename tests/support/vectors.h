// Shared by the vector runners: the files of one kind under tests/vectors/,
// in the same (sorted) order on every host, and their bytes.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gitlocks::test {

// tests/vectors/ of the source tree (tests/support/vectors_dir.cpp: the one
// translation unit that carries the build's absolute path, so that the others
// compile to the same objects in every clone and hit ccache).
const std::filesystem::path& vectors_dir();

inline std::vector<std::filesystem::path> vector_files(const std::string& kind) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(vectors_dir() / kind, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".json") files.push_back(it->path());
  std::sort(files.begin(), files.end());
  return files;
}

inline std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace gitlocks::test
