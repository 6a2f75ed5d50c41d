# Writes OUT (im_version.h) with VERSION and the current git hash; rewrites
# the file only when it changes, so an unchanged tree does not rebuild.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE hash OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT hash)
  set(hash "unknown")
elseif(dirty)
  set(hash "${hash}-dirty")
endif()
set(text "#ifndef IM_VERSION_H\n#define IM_VERSION_H\n#define IM_VERSION \"${VERSION}\"\n#define IM_GIT_HASH \"${hash}\"\n#endif\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE ${OUT} "${text}")
endif()
