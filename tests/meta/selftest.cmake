# meta/unit_registry_selftest: check-unit-registry.cmake must fail on a test
# binary with a case name that ctest cannot select and on a registry that
# lacks cases, naming both; a checker that cannot fail proves nothing.
cmake_minimum_required(VERSION 3.25)
execute_process(
  COMMAND "${CMAKE_COMMAND}" "-DUNIT=${FAKE}" "-DCTEST=${CTEST}" "-DBUILD_DIR=${BUILD_DIR}"
          "-DPREFIX=unit/" -P "${CHECK}"
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
set(all "${out}${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "selftest: the checker passed a broken registry:\n${all}")
endif()
foreach(expected
    "case name with a ctest/doctest-filter character (; , * ? \\): claim: exclusive conflicts, shared admitted"
    "case not registered with ctest: unit/plain case")
  string(FIND "${all}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "selftest: the checker's report lacks \"${expected}\":\n${all}")
  endif()
endforeach()
message(STATUS "selftest: the checker fails a broken registry, as it must")
