# Run at every build (cli/CMakeLists.txt): writes OUT_FILE with the git commit of SOURCE_DIR (and
# "-dirty" for uncommitted changes) for `nanodist --version`, touching it only when it changes.
execute_process(COMMAND git -C ${SOURCE_DIR} rev-parse --short=12 HEAD OUTPUT_VARIABLE commit
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT commit)
  set(commit "unknown")
else()
  execute_process(COMMAND git -C ${SOURCE_DIR} status --porcelain --untracked-files=no OUTPUT_VARIABLE changes
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(changes)
    set(commit "${commit}-dirty")
  endif()
endif()
set(text "// Written by cmake/NanodistCommit.cmake at build time.\n#define ND_GIT_COMMIT \"${commit}\"\n")
if(EXISTS ${OUT_FILE})
  file(READ ${OUT_FILE} old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE ${OUT_FILE} "${text}")
endif()
