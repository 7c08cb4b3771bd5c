# Native dependencies: Debian packages (toolchains/setup.sh installs them).
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBGIT2 REQUIRED IMPORTED_TARGET libgit2)
pkg_check_modules(SODIUM REQUIRED IMPORTED_TARGET libsodium)
find_package(nlohmann_json 3.10 REQUIRED)
add_library(gitlocks_dep_git2 INTERFACE)
# The static libgit2 of toolchains/native-deps.sh (the same version, without
# HTTPS/SSH: no CA bundle parsed at start-up, ~20 fewer shared libraries for
# every short git-locks process) when it is there; else Debian's shared one.
# The installed package names the system libgit2 either way.
if(DEFINED ENV{GITLOCKS_CACHE})
  set(_gitlocks_native_cache "$ENV{GITLOCKS_CACHE}")
else()
  set(_gitlocks_native_cache "$ENV{HOME}/.cache/gitlocks")
endif()
set(GITLOCKS_LIBGIT2_PREFIX "${_gitlocks_native_cache}/native/libgit2" CACHE PATH
    "prefix of the static libgit2 built by toolchains/native-deps.sh")
set(GITLOCKS_HTTPLIB_PREFIX "${_gitlocks_native_cache}/native/cpp-httplib" CACHE PATH
    "prefix of the header-only cpp-httplib of toolchains/native-deps.sh")
option(GITLOCKS_USE_NATIVE_DEPS "link the builds of toolchains/native-deps.sh (GITLOCKS_LIBGIT2_PREFIX, GITLOCKS_HTTPLIB_PREFIX) when they exist" ON)
if(GITLOCKS_USE_NATIVE_DEPS AND EXISTS "${GITLOCKS_LIBGIT2_PREFIX}/lib/libgit2.a")
  file(REAL_PATH "${GITLOCKS_LIBGIT2_PREFIX}" _gitlocks_git2_real)
  message(STATUS "libgit2: static, ${_gitlocks_git2_real}")
  find_package(ZLIB REQUIRED)
  find_package(Threads REQUIRED)
  find_library(GITLOCKS_HTTP_PARSER http_parser REQUIRED)
  target_include_directories(gitlocks_dep_git2 SYSTEM INTERFACE "${_gitlocks_git2_real}/include")
  target_link_libraries(gitlocks_dep_git2 INTERFACE "${_gitlocks_git2_real}/lib/libgit2.a" ZLIB::ZLIB
                        "${GITLOCKS_HTTP_PARSER}" Threads::Threads rt)
else()
  message(STATUS "libgit2: Debian's shared libgit2 (run toolchains/native-deps.sh for the faster static one)")
  target_link_libraries(gitlocks_dep_git2 INTERFACE PkgConfig::LIBGIT2)
endif()
add_library(gitlocks_dep_sodium INTERFACE)
target_link_libraries(gitlocks_dep_sodium INTERFACE PkgConfig::SODIUM)
add_library(gitlocks_dep_json INTERFACE)
target_link_libraries(gitlocks_dep_json INTERFACE nlohmann_json::nlohmann_json)

# cpp-httplib (the notary, its client, `git-locks web`): header-only from
# toolchains/native-deps.sh when it is there (no OpenSSL or brotli loaded by
# every git-locks process: ~1.6 ms of CPU each), else Debian's shared one.
find_package(Threads REQUIRED)
add_library(gitlocks_dep_httplib INTERFACE)
if(GITLOCKS_USE_NATIVE_DEPS AND EXISTS "${GITLOCKS_HTTPLIB_PREFIX}/include/httplib.h")
  file(REAL_PATH "${GITLOCKS_HTTPLIB_PREFIX}" _gitlocks_httplib_real)
  message(STATUS "cpp-httplib: header-only, ${_gitlocks_httplib_real}")
  target_include_directories(gitlocks_dep_httplib SYSTEM INTERFACE "${_gitlocks_httplib_real}/include")
  target_link_libraries(gitlocks_dep_httplib INTERFACE Threads::Threads)
else()
  message(STATUS "cpp-httplib: Debian's shared library")
  pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
  target_link_libraries(gitlocks_dep_httplib INTERFACE PkgConfig::HTTPLIB Threads::Threads)
endif()
