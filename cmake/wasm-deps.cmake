# WASM dependencies: static libsodium and libgit2 built by toolchains/wasm-deps.sh
# from Debian source packages, cached outside the tree. em++ does not see
# /usr/include; the prefix exposes only the headers we need.
set(GITLOCKS_WASM_PREFIX "$ENV{HOME}/.cache/gitlocks/wasm/current" CACHE PATH
    "Prefix of the WASM builds of libsodium and libgit2 (toolchains/wasm-deps.sh)")
if(NOT EXISTS "${GITLOCKS_WASM_PREFIX}/lib/libgit2.a")
  message(FATAL_ERROR "No WASM dependencies in ${GITLOCKS_WASM_PREFIX}; run toolchains/setup.sh")
endif()
add_library(gitlocks_dep_git2 INTERFACE)
target_include_directories(gitlocks_dep_git2 SYSTEM INTERFACE "${GITLOCKS_WASM_PREFIX}/include")
target_link_libraries(gitlocks_dep_git2 INTERFACE "${GITLOCKS_WASM_PREFIX}/lib/libgit2.a")
add_library(gitlocks_dep_sodium INTERFACE)
target_include_directories(gitlocks_dep_sodium SYSTEM INTERFACE "${GITLOCKS_WASM_PREFIX}/include")
target_link_libraries(gitlocks_dep_sodium INTERFACE "${GITLOCKS_WASM_PREFIX}/lib/libsodium.a")
add_library(gitlocks_dep_json INTERFACE)
target_include_directories(gitlocks_dep_json SYSTEM INTERFACE "${GITLOCKS_WASM_PREFIX}/include")
# One place for Emscripten link flags of every executable we build.
set(GITLOCKS_WASM_LINK_FLAGS
    -sWASM_ASYNC_COMPILATION=0 -sALLOW_MEMORY_GROWTH=1 -sENVIRONMENT=node
    -sNODERAWFS=1 -sEXIT_RUNTIME=1 -sTOTAL_STACK=1048576)
