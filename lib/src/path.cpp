#include "gitlocks/path.hpp"

#include <algorithm>

#include "utf8.h"

namespace gitlocks {

std::string RepoPath::key() const {
  std::string out;
  for (std::size_t i = 0; i < components.size(); ++i) {
    if (i) out += '/';
    out += components[i];
  }
  return out;
}

std::string RepoPath::display() const { return directory ? key() + "/" : key(); }

Result<RepoPath> parse_repo_path(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return make_error(Errc::bad_path, "invalid path: " + why);
  };
  if (text.empty()) return bad("empty");
  if (text.size() > kMaxPathBytes) return bad("longer than 4096 bytes");
  if (!detail::utf8_valid(text)) return bad("not valid UTF-8");
  for (unsigned char c : text) {
    if (c == 0) return bad("contains NUL");
    if (c < 0x20 || c == 0x7f) return bad("contains a control character");
    if (c == '\\') return bad("contains '\\' (use '/' as the separator)");
  }
  if (text.front() == '/') return bad("absolute (leading '/')");
  RepoPath p;
  p.directory = text.back() == '/';
  std::string_view rest = p.directory ? text.substr(0, text.size() - 1) : text;
  if (rest.empty()) return bad("empty");
  std::size_t start = 0;
  while (true) {
    std::size_t end = rest.find('/', start);
    std::string_view comp = rest.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (comp.empty()) return bad("empty component ('//')");
    if (comp == ".") return bad("'.' component");
    if (comp == "..") return bad("'..' component");
    if (comp.size() > kMaxComponentBytes) return bad("component longer than 255 bytes");
    p.components.emplace_back(comp);
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return p;
}

bool paths_overlap(const RepoPath& a, const RepoPath& b) {
  std::size_t n = std::min(a.components.size(), b.components.size());
  return std::equal(a.components.begin(), a.components.begin() + static_cast<std::ptrdiff_t>(n),
                    b.components.begin());
}

}  // namespace gitlocks
