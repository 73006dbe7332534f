# markdown_blocks.cmake: finds the fenced code blocks of a Markdown file, for the docs checks
# (tests/docs/CMakeLists.txt at configure time, check_docs.cmake at test time).
#
# Why string indices and not lists: code holds ';', '[' and ']', which CMake lists would split
# or mangle, so the text is only ever cut with string(FIND) and string(SUBSTRING).
#
# docs_parse_blocks(<markdown file> <prefix>) sets, in the caller's scope:
#   <prefix>_COUNT          the number of fenced blocks (``` at the start of a line, to the next ```)
#   <prefix>_<i>_INFO       block i's info string, e.g. "cpp" or "cpp excerpt rl/learning/losses.cpp" (i from 1)
#   <prefix>_<i>_LINE       the line of its opening fence (1-based)
#   <prefix>_<i>_BODY       the lines between the fences, each ending in "\n"
# A block left open at the end of the file is an error (it would swallow the rest of the file).
function(docs_parse_blocks markdown prefix)
  file(READ "${markdown}" text)
  string(REPLACE "\r\n" "\n" text "${text}")
  set(rest "\n${text}")   # every fence, the first line's included, now follows a "\n"
  set(line 0)             # the line that `rest` starts on, minus 1 (for the leading "\n")
  set(count 0)
  while(TRUE)
    string(FIND "${rest}" "\n```" open)
    if(open EQUAL -1)
      break()
    endif()
    # Lines before the fence.
    string(SUBSTRING "${rest}" 0 ${open} before)
    docs_count_newlines("${before}" n)
    math(EXPR open_line "${line} + ${n} + 1")
    math(EXPR start "${open} + 4")
    string(SUBSTRING "${rest}" ${start} -1 rest)
    # The info string: the rest of the fence's line.
    string(FIND "${rest}" "\n" eol)
    if(eol EQUAL -1)
      message(FATAL_ERROR "${markdown}:${open_line}: a code block is opened on the last line")
    endif()
    string(SUBSTRING "${rest}" 0 ${eol} info)
    string(STRIP "${info}" info)
    string(SUBSTRING "${rest}" ${eol} -1 rest)   # starts with the "\n" ending the fence's line
    string(FIND "${rest}" "\n```" close)
    if(close EQUAL -1)
      message(FATAL_ERROR "${markdown}:${open_line}: a code block (```${info}) is never closed")
    endif()
    if(close EQUAL 0)
      set(body "")
    else()
      math(EXPR body_length "${close}")
      string(SUBSTRING "${rest}" 1 ${body_length} body)   # drops the leading "\n", keeps the last
    endif()
    docs_count_newlines("${body}" n)
    math(EXPR count "${count} + 1")
    set(${prefix}_${count}_INFO "${info}" PARENT_SCOPE)
    set(${prefix}_${count}_LINE "${open_line}" PARENT_SCOPE)
    set(${prefix}_${count}_BODY "${body}" PARENT_SCOPE)
    # Past the closing fence's line.
    math(EXPR after "${close} + 4")
    string(SUBSTRING "${rest}" ${after} -1 rest)
    string(FIND "${rest}" "\n" eol)
    if(eol EQUAL -1)
      set(rest "")
    else()
      string(SUBSTRING "${rest}" ${eol} -1 rest)
    endif()
    math(EXPR line "${open_line} + ${n} + 1")
  endwhile()
  set(${prefix}_COUNT ${count} PARENT_SCOPE)
endfunction()

function(docs_count_newlines text out)
  string(REGEX MATCHALL "\n" newlines "${text}")
  list(LENGTH newlines n)
  set(${out} ${n} PARENT_SCOPE)
endfunction()
