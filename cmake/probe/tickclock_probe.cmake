# tickclock-probe without Bazel: the sources of src/probe/BUILD's
# cc_binary, C++17, linked with the tools library (tickclock_tools, which
# brings the core) and -pthread.
# Installed with its man page and bash completion (cmake/probe/).
enable_language(CXX)

# Every .cc of src/probe but tests: src/probe/BUILD lists the same files,
# and a file added there (a new subcommand's cmd_NAME.cc) is built here
# without editing this list.
file(GLOB _tickclock_probe_srcs CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/src/probe/*.cc")
list(FILTER _tickclock_probe_srcs EXCLUDE REGEX "_test\\.cc$")

add_executable(tickclock-probe ${_tickclock_probe_srcs})
set_target_properties(tickclock-probe PROPERTIES
  CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF)
# "src/probe/util.h" from the repository root, "tickclock.h" from the core,
# "tickclock_tools.h" from src/tools
target_include_directories(tickclock-probe PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}")
target_link_libraries(tickclock-probe PRIVATE tickclock_tools Threads::Threads)
if(TICKCLOCK_STATIC_PROBE)
  target_link_options(tickclock-probe PRIVATE -static)
endif()

if(TICKCLOCK_INSTALL)
  install(TARGETS tickclock-probe RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
  install(FILES "${CMAKE_CURRENT_SOURCE_DIR}/cmake/probe/tickclock-probe.1"
          DESTINATION "${CMAKE_INSTALL_MANDIR}/man1")
  # bash-completion loads completions/NAME on demand, by the command's name.
  install(FILES "${CMAKE_CURRENT_SOURCE_DIR}/cmake/probe/tickclock-probe.bash"
          DESTINATION "${CMAKE_INSTALL_DATADIR}/bash-completion/completions"
          RENAME tickclock-probe)
  # the JSON Schema of every --json output, which the man page points to
  install(FILES "${CMAKE_CURRENT_SOURCE_DIR}/src/probe/schema/tickclock-probe.schema.json"
          DESTINATION "${CMAKE_INSTALL_DATADIR}/tickclock-probe")
endif()
