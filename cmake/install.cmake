# `make install PREFIX=...` (cmake --install), `make uninstall` (from
# install_manifest.txt) and `make deb` (scripts/make-deb.sh, the same tree
# staged under DESTDIR): the binary, the man page, the completions, the
# documentation, the scenarios and deploy/.
include(GNUInstallDirs)
# zsh looks in share/zsh/site-functions under /usr/local, Debian's zsh in
# share/zsh/vendor-completions under /usr (make deb sets that).
set(IM_ZSH_COMPLETION_DIR ${CMAKE_INSTALL_DATADIR}/zsh/site-functions
    CACHE STRING "Where the zsh completion function is installed (relative to the prefix)")
set(IM_BASH_COMPLETION_DIR ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
    CACHE STRING "Where the bash completion is installed (relative to the prefix)")

install(TARGETS infermeter_bin RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(IM_CLI_DOCS)
  install(FILES ${IM_MAN_PAGE} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
  install(FILES ${IM_BASH_COMPLETION} DESTINATION ${IM_BASH_COMPLETION_DIR})
  install(FILES ${IM_ZSH_COMPLETION} DESTINATION ${IM_ZSH_COMPLETION_DIR})
endif()
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/LICENSE
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/scenarios/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/infermeter/scenarios)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/deploy/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/infermeter/deploy
        PATTERN "__pycache__" EXCLUDE)
