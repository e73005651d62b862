# Turns the dashboard page into a C++ raw string literal that transports/dashboard.cpp includes:
#   cmake -DINPUT=.../index.html -DOUTPUT=.../dashboard_html.inc -P embed.cmake
# The page stays the source of truth; the literal's delimiter is chosen so that it cannot occur in
# the page. The output is only rewritten when it changes.
cmake_minimum_required(VERSION 3.21)
if(NOT INPUT OR NOT OUTPUT)
  message(FATAL_ERROR "embed.cmake: pass -DINPUT=<html> -DOUTPUT=<inc>")
endif()
file(READ "${INPUT}" html)
string(FIND "${html}" "\r" cr)
if(NOT cr EQUAL -1)
  message(FATAL_ERROR "embed.cmake: ${INPUT} has CR line endings; use LF")
endif()

# A raw string ends at `)DELIM"`; DELIM is at most 16 characters.
set(delim "tenure_html")
set(n 0)
while(TRUE)
  string(FIND "${html}" ")${delim}\"" hit)
  if(hit EQUAL -1)
    break()
  endif()
  math(EXPR n "${n} + 1")
  if(n GREATER 99)
    message(FATAL_ERROR "embed.cmake: no raw string delimiter fits ${INPUT}")
  endif()
  set(delim "tenure_html${n}")
endwhile()

file(WRITE "${OUTPUT}.tmp"
  "// Generated from transports/dashboard/index.html by transports/dashboard/embed.cmake.\n"
  "// Do not edit: edit the page and rebuild.\n"
  "R\"${delim}(${html})${delim}\"\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
