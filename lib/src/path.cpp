#include "gitlocks/path.hpp"

#include <algorithm>
#include <cstdio>

#include "gitlocks/unicode.hpp"
#include "unicode.h"
#include "utf8.h"

namespace gitlocks {

namespace {

// `text` for a message: the code points NFC would change, and combining
// marks, as \uXXXX, so an NFD spelling is visible next to its NFC form.
std::string visible(std::string_view text) {
  std::string out;
  for (char32_t c : detail::utf8_decode(text)) {
    const std::u32string one(1, c);
    if (c < 0x80 || (!detail::combining_class(c) && detail::nfc(one) == one)) {
      out += detail::utf8_encode(one);
      continue;
    }
    char buf[16];
    std::snprintf(buf, sizeof buf, c > 0xFFFF ? "\\U%08X" : "\\u%04X", static_cast<unsigned>(c));
    out += buf;
  }
  return out;
}

}  // namespace

std::string RepoPath::key() const {
  std::string out;
  for (std::size_t i = 0; i < components.size(); ++i) {
    if (i) out += '/';
    out += components[i];
  }
  return out;
}

std::string RepoPath::display() const { return directory ? key() + "/" : key(); }

Result<RepoPath> parse_repo_path(std::string_view text, PathCase path_case) {
  auto bad = [&](const std::string& why) { return make_error(Errc::bad_path, "invalid path: " + why); };
  if (text.empty()) return bad("empty");
  if (text.size() > kMaxPathBytes) return bad("longer than 4096 bytes");
  if (!detail::utf8_valid(text)) return bad("not valid UTF-8");
  for (unsigned char c : text) {
    if (c == 0) return bad("contains NUL");
    if (c < 0x20 || c == 0x7f) return bad("contains a control character");
    if (c == '\\') return bad("contains '\\' (use '/' as the separator)");
  }
  if (text.front() == '/') return bad("absolute (leading '/')");
  if (longest_nonstarter_run(text) > kMaxCombiningRun)
    return bad("more than 30 combining marks in a row (Unicode's stream-safe limit)");
  GITLOCKS_TRY(nfc, to_nfc(text));
  if (nfc != text)
    return make_error(Errc::bad_path, "path '" + visible(text) + "' is not in Unicode NFC (write '" + nfc +
                                          "'); git-locks normalizes what you type, a packet must carry the NFC form");
  if (path_case == PathCase::insensitive) {
    GITLOCKS_TRY(folded, case_fold_nfc(text));
    if (folded != text)
      return make_error(Errc::bad_path, "path '" + std::string(text) +
                                            "' is not in this case-insensitive store's canonical form (write '" +
                                            folded + "')");
  }
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

Result<std::string> normalize_path_input(std::string_view text, PathCase path_case) {
  if (!detail::utf8_valid(text)) return make_error(Errc::bad_path, "invalid path: not valid UTF-8");
  if (longest_nonstarter_run(text) > kMaxCombiningRun)
    return make_error(Errc::bad_path,
                      "invalid path: more than 30 combining marks in a row (Unicode's stream-safe limit)");
  GITLOCKS_TRY(canonical, path_case == PathCase::insensitive ? case_fold_nfc(text) : to_nfc(text));
  GITLOCKS_TRY(p, parse_repo_path(canonical, path_case));
  return p.display();
}

std::vector<std::string> proper_ancestors(const RepoPath& p) {
  std::vector<std::string> out;
  std::string acc;
  for (std::size_t i = 0; i + 1 < p.components.size(); ++i) {
    if (i) acc += '/';
    acc += p.components[i];
    out.push_back(acc);
  }
  return out;
}

bool paths_overlap(const RepoPath& a, const RepoPath& b) {
  std::size_t n = std::min(a.components.size(), b.components.size());
  return std::equal(a.components.begin(), a.components.begin() + static_cast<std::ptrdiff_t>(n), b.components.begin());
}

}  // namespace gitlocks
