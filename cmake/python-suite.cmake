# gitlocks_python_suite(PREFIX [LABELS L...] [TIMEOUT S] [ENVIRONMENT VAR=VALUE...])
#
# One ctest per Python unittest module test_*.py of the current source
# directory, named PREFIX/<module without test_>, run from that directory
# with Python3::Interpreter through tests/support/unittest_ci.py, so a skip
# is reported as skipped (exit 77), and under CI=true fails; used by the CLI,
# notary and remote suites.
function(gitlocks_python_suite prefix)
  cmake_parse_arguments(S "" "TIMEOUT" "LABELS;ENVIRONMENT" ${ARGN})
  if(NOT S_TIMEOUT)
    set(S_TIMEOUT 300)
  endif()
  file(GLOB modules CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/test_*.py")
  foreach(test_file IN LISTS modules)
    get_filename_component(module "${test_file}" NAME_WE)
    string(REPLACE "test_" "" name "${module}")
    add_test(NAME "${prefix}/${name}"
             COMMAND Python3::Interpreter "${PROJECT_SOURCE_DIR}/tests/support/unittest_ci.py" "${module}"
             WORKING_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}")
    set_tests_properties("${prefix}/${name}" PROPERTIES
      ENVIRONMENT "${S_ENVIRONMENT};PYTHONDONTWRITEBYTECODE=1"
      LABELS "${S_LABELS}"
      SKIP_RETURN_CODE 77
      TIMEOUT ${S_TIMEOUT})
    gitlocks_test_cost("${prefix}/${name}")
  endforeach()
endfunction()

# Long tests first under ctest -j (GITLOCKS_LONG_TESTS, tests/CMakeLists.txt).
function(gitlocks_test_cost name)
  if(name IN_LIST GITLOCKS_LONG_TESTS)
    set_tests_properties("${name}" PROPERTIES COST 100)
  endif()
endfunction()
