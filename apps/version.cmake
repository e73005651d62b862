# Writes version.cpp with the commit checked out now. Run at every build (apps/CMakeLists.txt):
# configure_file rewrites it only when the text changed, so an unchanged commit rebuilds nothing.
set(TENURE_VERSION_TEXT "${VERSION}")
if(GIT_EXECUTABLE AND EXISTS "${SOURCE_DIR}/.git")
  execute_process(COMMAND "${GIT_EXECUTABLE}" rev-parse --short=12 HEAD
                  WORKING_DIRECTORY "${SOURCE_DIR}"
                  OUTPUT_VARIABLE commit
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(commit)
    string(APPEND TENURE_VERSION_TEXT " (git ${commit})")
  endif()
endif()
configure_file("${IN}" "${OUT}" @ONLY)
