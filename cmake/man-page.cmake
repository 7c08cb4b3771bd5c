# cmake -DHELP2MAN=... -DPROGRAM=git-locks -DNAME_LINE=... -DINCLUDE=file.h2m
#       -DOUT=dir/git-locks.1 -P man-page.cmake
#
# git-locks(1) from the built binary's --help and --version (help2man), so
# the page lists exactly the commands, flags, exit codes and environment of
# the command table. help2man keeps a heading like "Commands:" as a
# sub-section of DESCRIPTION; each becomes a section of its own here
# ("Exit status:" -> EXIT STATUS, "Global flags (anywhere before --):" ->
# GLOBAL FLAGS and the paragraph "Anywhere before --."). Also writes OUT.gz
# (gzip -n: no timestamp, the same bytes on every build).
execute_process(
  COMMAND "${HELP2MAN}" --no-info --name=${NAME_LINE} --include=${INCLUDE} --output=${OUT}.raw "${PROGRAM}"
  RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "help2man failed (${status}) on ${PROGRAM}")
endif()
file(STRINGS "${OUT}.raw" lines)
set(page "")
foreach(line IN LISTS lines)
  if(line MATCHES "^\\.SS \"([^\"(]*[^ \"(]) *(\\(([^)]*)\\))?:\"$")
    string(TOUPPER "${CMAKE_MATCH_1}" section)
    string(APPEND page ".SH \"${section}\"\n")
    if(CMAKE_MATCH_3)
      string(SUBSTRING "${CMAKE_MATCH_3}" 0 1 head)
      string(SUBSTRING "${CMAKE_MATCH_3}" 1 -1 tail)
      string(TOUPPER "${head}" head)
      string(REPLACE "-" "\\-" tail "${tail}")
      string(APPEND page "${head}${tail}.\n")
    endif()
  else()
    string(APPEND page "${line}\n")
  endif()
endforeach()
file(WRITE "${OUT}" "${page}")
file(REMOVE "${OUT}.raw")
execute_process(COMMAND gzip -9 -n -c "${OUT}" OUTPUT_FILE "${OUT}.gz" RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "gzip failed (${status}) on ${OUT}")
endif()
