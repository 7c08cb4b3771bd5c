# cmake -DUNIT=<binary> [-DEMULATOR=<node>] -DCTEST=<ctest> -DBUILD_DIR=<dir>
#       -DPREFIX=unit/ -P check-unit-registry.cmake
#
# Fails unless ctest's registered unit entries map one to one onto doctest's
# own test cases. doctest_discover_tests turns every case into a ctest entry
# that runs `--test-case=<name>`; a name with `;` is split by CMake into
# several entries, and a name with a doctest filter character (`,` separates
# filters, `*` and `?` are wildcards, `\` escapes) selects zero or several
# cases. Either way an entry can pass while running nothing, so this check
# compares doctest's --count with ctest's entries, name by name, and rejects
# those characters in names.
cmake_minimum_required(VERSION 3.25)
foreach(var UNIT CTEST BUILD_DIR PREFIX)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check-unit-registry: -D${var}= is required")
  endif()
endforeach()

execute_process(COMMAND ${EMULATOR} "${UNIT}" --count --no-version
                OUTPUT_VARIABLE count_out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT count_out MATCHES "passing the current filters: ([0-9]+)")
  message(FATAL_ERROR "check-unit-registry: `${UNIT} --count` failed (${rc}): ${count_out}")
endif()
set(doctest_count ${CMAKE_MATCH_1})

execute_process(COMMAND ${EMULATOR} "${UNIT}" --list-test-cases --no-version
                OUTPUT_VARIABLE list_out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "check-unit-registry: `${UNIT} --list-test-cases` failed (${rc})")
endif()
# Bracket-quote each line so that `;` inside a name survives as text.
string(REPLACE ";" "<SEMICOLON>" list_out "${list_out}")
string(REPLACE "\n" ";" lines "${list_out}")
set(cases "")
set(bad "")
foreach(line IN LISTS lines)
  if(line STREQUAL "" OR line MATCHES "^\\[doctest\\]" OR line MATCHES "^=+$")
    continue()
  endif()
  if(line MATCHES "<SEMICOLON>|[,*?\\\\]")
    list(APPEND bad "${line}")
  endif()
  list(APPEND cases "${PREFIX}${line}")
endforeach()
list(LENGTH cases listed)

execute_process(COMMAND "${CTEST}" --test-dir "${BUILD_DIR}" -N
                OUTPUT_VARIABLE ctest_out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "check-unit-registry: `ctest -N` failed (${rc}): ${ctest_out}")
endif()
string(REPLACE ";" "<SEMICOLON>" ctest_out "${ctest_out}")
string(REPLACE "\n" ";" ctest_lines "${ctest_out}")
set(registered "")
foreach(line IN LISTS ctest_lines)
  string(LENGTH "${PREFIX}" plen)
  if(line MATCHES "^ *Test +#[0-9]+: (.*)$")
    set(name "${CMAKE_MATCH_1}")
    string(SUBSTRING "${name}" 0 ${plen} head)
    if(head STREQUAL PREFIX)
      list(APPEND registered "${name}")
    endif()
  endif()
endforeach()
list(LENGTH registered registered_count)

set(problems "")
if(NOT listed EQUAL doctest_count)
  string(APPEND problems "  --list-test-cases names ${listed} cases, --count says ${doctest_count}\n")
endif()
if(NOT registered_count EQUAL doctest_count)
  string(APPEND problems "  ctest registers ${registered_count} ${PREFIX} entries, doctest counts ${doctest_count} cases\n")
endif()
foreach(name IN LISTS bad)
  string(APPEND problems "  case name with a ctest/doctest-filter character (; , * ? \\): ${name}\n")
endforeach()
foreach(name IN LISTS cases)
  if(NOT name IN_LIST registered)
    string(APPEND problems "  case not registered with ctest: ${name}\n")
  endif()
endforeach()
foreach(name IN LISTS registered)
  if(NOT name IN_LIST cases)
    string(APPEND problems "  ctest entry that is no doctest case: ${name}\n")
  endif()
endforeach()
if(problems)
  string(REPLACE "<SEMICOLON>" ";" problems "${problems}")
  message(FATAL_ERROR "check-unit-registry: ctest and doctest disagree:\n${problems}")
endif()
message(STATUS "check-unit-registry: ${doctest_count} doctest cases = ${registered_count} ctest entries")
