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
option(GITLOCKS_STATIC_LIBGIT2 "link the static libgit2 at GITLOCKS_LIBGIT2_PREFIX when it exists" ON)
if(GITLOCKS_STATIC_LIBGIT2 AND EXISTS "${GITLOCKS_LIBGIT2_PREFIX}/lib/libgit2.a")
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
