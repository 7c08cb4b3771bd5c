# The warnings of every C++ target we build, in one place: each target links
# gitlocks_warnings PRIVATE, through $<BUILD_INTERFACE:...> where the target
# is installed, so the exported package never names it. Third-party headers
# come in as SYSTEM includes (cmake/native-deps.cmake, cmake/wasm-deps.cmake,
# imported targets), so only our sources are held to these. The presets turn
# warnings into errors (CMAKE_COMPILE_WARNING_AS_ERROR), not this file.
add_library(gitlocks_warnings INTERFACE)
target_compile_options(gitlocks_warnings INTERFACE
  $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion>)
