# The man page and the bash and zsh completions, generated at every build of
# the binary from its own --help texts (scripts/gen-cli-docs.py), so they
# cannot drift from the options it accepts; tests/cli/test_cli_docs.sh
# checks every flag of every --help against them. Needs python3; without it
# they are not built (and not installed).
find_package(Python3 COMPONENTS Interpreter)
set(IM_MAN_PAGE ${CMAKE_BINARY_DIR}/infermeter.1)
set(IM_BASH_COMPLETION ${CMAKE_BINARY_DIR}/completions/infermeter)
set(IM_ZSH_COMPLETION ${CMAKE_BINARY_DIR}/completions/_infermeter)
if(Python3_Interpreter_FOUND)
  set(gen ${CMAKE_SOURCE_DIR}/scripts/gen-cli-docs.py)
  set(bin $<TARGET_FILE:infermeter_bin>)
  file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/completions)
  add_custom_command(
    OUTPUT ${IM_MAN_PAGE} ${IM_BASH_COMPLETION} ${IM_ZSH_COMPLETION}
    COMMAND ${Python3_EXECUTABLE} ${gen} ${bin} man ${IM_MAN_PAGE} ${PROJECT_VERSION}
    COMMAND ${Python3_EXECUTABLE} ${gen} ${bin} bash ${IM_BASH_COMPLETION}
    COMMAND ${Python3_EXECUTABLE} ${gen} ${bin} zsh ${IM_ZSH_COMPLETION}
    DEPENDS infermeter_bin ${gen}
    COMMENT "Generating infermeter.1 and the shell completions from --help" VERBATIM)
  add_custom_target(cli_docs ALL DEPENDS ${IM_MAN_PAGE} ${IM_BASH_COMPLETION} ${IM_ZSH_COMPLETION})
  set(IM_CLI_DOCS ON)
else()
  message(STATUS "python3 not found: no man page or shell completions")
  set(IM_CLI_DOCS OFF)
endif()

# Tests: the generated files against the binary's --help, the option tables
# and groff (tests/cli/test_cli_docs.sh); the Debian package built from the
# install tree and installed with dpkg into a private root
# (tests/cli/test_deb.sh, label deb: about 10 s, exit 77 without dpkg).
if(IM_CLI_DOCS)
  add_test(NAME cli_docs COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/test_cli_docs.sh
           $<TARGET_FILE:infermeter_bin> ${CMAKE_BINARY_DIR} WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(cli_docs PROPERTIES LABELS unit TIMEOUT 120 SKIP_RETURN_CODE 77)
  if(NOT IM_SANITIZE)
    add_test(NAME deb COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/test_deb.sh ${CMAKE_BINARY_DIR}
             WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    set_tests_properties(deb PROPERTIES LABELS deb TIMEOUT 300 RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
  endif()
endif()
# Every stderr message of src/cli in the form "infermeter[ COMMAND]: ...".
add_test(NAME cli_error_format COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/test_error_format.sh
         ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_error_format PROPERTIES LABELS unit TIMEOUT 60)
