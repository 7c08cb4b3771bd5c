# The Debian package (CPack DEB): `cmake --build --preset release --target deb`
# builds the web page (wasm preset) when needed and runs `cpack -G DEB`, which
# writes build/release/git-locks_<version>_<arch>.deb. README "Install".
#
# The package is the tool only: the cli component (/usr/bin/git-locks, the
# man page, the bash completion) and the web component (the page in
# /usr/share/git-locks/web). The static library, headers and package config
# (component dev) are for building against the core from source and stay out
# of it, as Debian keeps them out of a tool's package.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME git-locks)
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_VENDOR "git-locks")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_CMAKE_PROJECTS "${PROJECT_BINARY_DIR};gitlocks;cli;/" "${PROJECT_BINARY_DIR};gitlocks;web;/")
set(CPACK_STRIP_FILES ON)
set(GITLOCKS_DEB_MAINTAINER "git-locks maintainers <git-locks@invalid>" CACHE STRING
    "Maintainer field of the .deb (no mailing address exists yet)")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${GITLOCKS_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_NAME git-locks)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION vcs)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The libraries come from dpkg-shlibdeps (libgit2, libsodium, libstdc++, ...);
# git because every command runs it; man-db for `git help locks`.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "git")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "man-db")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "bash-completion")
# Debian's first line is the summary above; this is the long description.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "git-locks keeps leases on repository paths and counted semaphores in the Git
ref refs/locks/state: every change is one commit carrying a signed
transaction, published by compare-and-swap (locally, or by push to a shared
remote), so the whole history can be replayed and verified. Runs as
`git locks`; `git-locks web` serves a page that verifies the history in the
browser (WebAssembly).")
include(CPack)

# cpack of the same CMake as this build.
get_filename_component(gitlocks_cmake_bin "${CMAKE_COMMAND}" DIRECTORY)
add_custom_target(deb
  COMMAND "${gitlocks_cmake_bin}/cpack" -G DEB --config "${PROJECT_BINARY_DIR}/CPackConfig.cmake"
  WORKING_DIRECTORY "${PROJECT_BINARY_DIR}"
  DEPENDS git-locks git-locks-docs web-site
  USES_TERMINAL
  COMMENT "Packaging ${PROJECT_BINARY_DIR}/git-locks_${PROJECT_VERSION}_*.deb")
