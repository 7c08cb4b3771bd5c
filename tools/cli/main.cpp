#include <cstdio>
#include <cstring>
int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--version") == 0) { std::printf("git-locks %s\n", GITLOCKS_VERSION); return 0; }
  std::printf("usage: git-locks <command>\n");
  return 0;
}
