# CTest names come from the Catch2 test case names (catch_discover_tests), and CMake reads a ';'
# in one as a list separator and '[' ']' as list brackets: "a; b" became two tests whose filters
# match nothing, so the case never ran while CTest reported both halves passed. This refuses
# such names in every test source. Run as a test: cmake -DSOURCE_DIR=<tests> -P check_test_names.cmake
cmake_policy(VERSION 3.25)
file(GLOB_RECURSE files ${SOURCE_DIR}/*.cpp)
list(FILTER files EXCLUDE REGEX "/names_fixture/")  # the check's own bad input
if(SOURCE_DIR MATCHES "names_fixture$")
  file(GLOB_RECURSE files ${SOURCE_DIR}/*.cpp)
endif()
set(bad "")
foreach(f IN LISTS files)
  file(STRINGS ${f} cases REGEX "TEST_CASE\\(\"")
  foreach(line IN LISTS cases)
    string(REGEX MATCH "TEST_CASE\\(\"([^\"]*)\"" m "${line}")
    set(name "${CMAKE_MATCH_1}")
    string(FIND "${name}" "[" bracket)
    string(FIND "${name}" "]" close)
    if(bracket GREATER_EQUAL 0 OR close GREATER_EQUAL 0)
      list(APPEND bad "${f}: \"${name}\" has a square bracket")
    endif()
  endforeach()
  # A ';' inside a name splits the file's line list too: look for it in the raw text, with the
  # semicolons spelled out first.
  file(READ ${f} text)
  string(REPLACE ";" "<semicolon>" text "${text}")
  string(REGEX MATCHALL "TEST_CASE\\(\"[^\"]*<semicolon>[^\"]*\"" semis "${text}")
  foreach(one IN LISTS semis)
    string(REGEX REPLACE "^TEST_CASE\\(" "" one "${one}")
    string(REPLACE "<semicolon>" "(semicolon)" one "${one}")
    list(APPEND bad "${f}: ${one} has a semicolon")
  endforeach()
endforeach()
if(bad)
  list(JOIN bad "\n  " msg)
  message(FATAL_ERROR "test names CTest cannot keep whole (use a comma for a semicolon, no brackets):\n  ${msg}")
endif()
message(STATUS "test names: none has a semicolon or a bracket")
