# tickclock-probe without Bazel: the sources of src/probe/BUILD's
# cc_binary, C++17, linked with the core (tickclock_internal) and -pthread.
# Installed with its man page and bash completion (cmake/probe/).
enable_language(CXX)

set(TICKCLOCK_PROBE_SOURCES
  checks.cc cmd_cpuid.cc cpuid_dump.cc cmd_report.cc cmd_timing.cc cmd_validate.cc
  validate_checks.cc validate_faults.cc cmd_warp.cc main.cc util.cc)
# A subcommand added to src/probe (cmd_*.cc) is built without editing this
# list; the fixed list above keeps the order and catches a removed file.
file(GLOB _tickclock_probe_cmds CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/src/probe/cmd_*.cc")
set(_tickclock_probe_srcs "")
foreach(_f ${TICKCLOCK_PROBE_SOURCES})
  list(APPEND _tickclock_probe_srcs "${CMAKE_CURRENT_SOURCE_DIR}/src/probe/${_f}")
endforeach()
list(APPEND _tickclock_probe_srcs ${_tickclock_probe_cmds})
list(REMOVE_DUPLICATES _tickclock_probe_srcs)

add_executable(tickclock-probe ${_tickclock_probe_srcs})
set_target_properties(tickclock-probe PROPERTIES
  CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF)
# "src/probe/util.h" from the repository root, "tickclock.h" from the core
target_include_directories(tickclock-probe PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}")
target_link_libraries(tickclock-probe PRIVATE tickclock_internal Threads::Threads)
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
endif()
