# check_docs.cmake: the test-time half of the docs checks (tests/docs/CMakeLists.txt), run as
#   cmake -DDOC=<file.md> -DROOT=<repository root> -P check_docs.cmake
#
# 1. Excerpts. A block fenced as ```cpp excerpt path/to/file.cpp quotes library code: its lines
#    must occur in that file (relative to ROOT), consecutively and verbatim except for trailing
#    whitespace. A quote of code that has since changed, or of a file that is gone, fails.
# 2. Links. Every relative link [text](path) must name a file or folder that exists (relative
#    to the Markdown file, as a reader's browser resolves it); web links and #anchors are not
#    checked.
# Every problem is reported on one line (file:line: what; NOTICE, which CMake does not wrap, so
# that the messages can be matched), then the script fails once at the end.
cmake_minimum_required(VERSION 3.25)
if(NOT DEFINED DOC OR NOT DEFINED ROOT)
  message(FATAL_ERROR "usage: cmake -DDOC=<file.md> -DROOT=<repository root> -P check_docs.cmake")
endif()
include(${CMAKE_CURRENT_LIST_DIR}/markdown_blocks.cmake)

# Trailing spaces and tabs go from every line; the text gets a "\n" on both ends, so that a
# search for "\n<lines>" matches whole lines only.
function(docs_normalise text out)
  string(REPLACE "\r\n" "\n" text "${text}")
  string(REGEX REPLACE "[ \t]+\n" "\n" text "${text}\n")
  set(${out} "\n${text}" PARENT_SCOPE)
endfunction()

set(problems 0)
set(n_excerpts 0)
docs_parse_blocks("${DOC}" block)
foreach(i RANGE 1 ${block_COUNT})
  if(block_COUNT EQUAL 0)
    break()
  endif()
  set(info "${block_${i}_INFO}")
  if(NOT info MATCHES "^cpp[ \t]+excerpt")
    continue()
  endif()
  set(where "${DOC}:${block_${i}_LINE}")
  if(NOT info MATCHES "^cpp[ \t]+excerpt[ \t]+([^ \t]+)$")
    message(NOTICE "${where}: an excerpt names no file (```cpp excerpt path/to/file)")
    math(EXPR problems "${problems} + 1")
    continue()
  endif()
  set(source "${CMAKE_MATCH_1}")
  math(EXPR n_excerpts "${n_excerpts} + 1")
  if(NOT EXISTS "${ROOT}/${source}" OR IS_DIRECTORY "${ROOT}/${source}")
    message(NOTICE "${where}: the excerpt quotes ${source}, which does not exist")
    math(EXPR problems "${problems} + 1")
    continue()
  endif()
  string(STRIP "${block_${i}_BODY}" stripped)
  if(stripped STREQUAL "")
    message(NOTICE "${where}: the excerpt of ${source} is empty")
    math(EXPR problems "${problems} + 1")
    continue()
  endif()
  file(READ "${ROOT}/${source}" code)
  docs_normalise("${code}" code)
  # The body ends in "\n" already; normalising adds one more, which is taken off again.
  docs_normalise("${block_${i}_BODY}" quote)
  string(REGEX REPLACE "\n$" "" quote "${quote}")
  string(FIND "${code}" "${quote}" found)
  if(found EQUAL -1)
    message(NOTICE "${where}: the excerpt does not occur in ${source} "
                       "(its lines must appear there consecutively and verbatim)")
    math(EXPR problems "${problems} + 1")
  endif()
endforeach()

# Relative links: [text](path) or [text](path#anchor), outside code blocks (where a lambda's
# [](auto x) is not a link). Brackets become < and > first: CMake lists treat [ and ] as
# grouping, which would glue the matches together.
file(READ "${DOC}" text)
foreach(i RANGE 1 ${block_COUNT})   # with no blocks: i = 1, 0, neither defined
  if(DEFINED block_${i}_BODY)
    string(REPLACE "${block_${i}_BODY}" "" text "${text}")
  endif()
endforeach()
string(REPLACE "[" "<" text "${text}")
string(REPLACE "]" ">" text "${text}")
get_filename_component(doc_dir "${DOC}" DIRECTORY)
string(REGEX MATCHALL ">\\([^)# \t\n]+" links "${text}")
set(n_links 0)
foreach(link IN LISTS links)
  string(SUBSTRING "${link}" 2 -1 target)
  if(target MATCHES "^[a-z]+:")   # https:, mailto:
    continue()
  endif()
  math(EXPR n_links "${n_links} + 1")
  if(NOT EXISTS "${doc_dir}/${target}")
    message(NOTICE "${DOC}: the link (${target}) names nothing that exists")
    math(EXPR problems "${problems} + 1")
  endif()
endforeach()

if(problems GREATER 0)
  message(NOTICE "${DOC}: ${problems} problem(s)")
  message(FATAL_ERROR "the docs check failed")
endif()
message(STATUS "${DOC}: ${n_excerpts} excerpt(s) and ${n_links} link(s) checked")
