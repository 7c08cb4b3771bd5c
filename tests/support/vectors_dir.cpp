#include "vectors.h"

namespace gitlocks::test {

const std::filesystem::path& vectors_dir() {
  static const std::filesystem::path dir(GITLOCKS_VECTORS_DIR);
  return dir;
}

}  // namespace gitlocks::test
