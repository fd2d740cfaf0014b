# The core's doctest suites without Bazel (tests/tickclock/BUILD has the
# same suites; here those that need no fake counter, no fixture data files
# and no Linux-only interface), registered with ctest.
#
# Which suites a platform builds is decided from what their sources need:
#   everywhere (MSVC included): conv, conv_noint128, ratio, decide,
#     init_race, cxx_api, cxx11_api, c_api_c99, c_api_cxx11;
#   where <dirent.h> exists (tests/support/fixture_util.h lists fixture
#     folders with it; not MSVC): cpuid_x86, fixture, x86_decide,
#     decide_limits.
# doctest is header-only: TICKCLOCK_DOCTEST_INCLUDE_DIR is the folder that
# holds doctest/doctest.h (Debian: doctest-dev's /usr/include). Without it
# the suites cannot be built, and ctest runs one test that fails saying
# so, never a silent "no tests". Run: ctest --test-dir build --no-tests=error
enable_language(CXX)
include(CheckIncludeFileCXX)

find_path(TICKCLOCK_DOCTEST_INCLUDE_DIR doctest/doctest.h
  DOC "folder with doctest/doctest.h (header-only doctest)")

if(NOT TICKCLOCK_DOCTEST_INCLUDE_DIR)
  message(WARNING "tickclock: doctest/doctest.h not found (set TICKCLOCK_DOCTEST_INCLUDE_DIR): "
                  "the core's tests are not built and ctest fails")
  add_test(NAME tickclock_doctest_missing
    COMMAND "${CMAKE_COMMAND}" -E echo
            "doctest/doctest.h was not found: no tickclock test was built")
  set_tests_properties(tickclock_doctest_missing PROPERTIES WILL_FAIL ON)
  return()
endif()

set(_tt "${CMAKE_CURRENT_SOURCE_DIR}/tests/tickclock")
add_library(tickclock_doctest_main OBJECT "${CMAKE_CURRENT_SOURCE_DIR}/tests/support/doctest_main.cc")
target_include_directories(tickclock_doctest_main PUBLIC "${TICKCLOCK_DOCTEST_INCLUDE_DIR}")
set_target_properties(tickclock_doctest_main PROPERTIES CXX_STANDARD 11 CXX_EXTENSIONS OFF)

if(MSVC)
  set(_tickclock_test_warn /W3)
else()
  set(_tickclock_test_warn -Wall -Wextra)
endif()

# tickclock_test(NAME SOURCE CXX_STD [defines...]): a doctest suite linked
# with the core, the tools library (fixtures) and doctest's main().
function(tickclock_test name src std)
  add_executable(${name} "${src}" $<TARGET_OBJECTS:tickclock_doctest_main>)
  target_include_directories(${name} PRIVATE "${TICKCLOCK_DOCTEST_INCLUDE_DIR}"
                                             "${CMAKE_CURRENT_SOURCE_DIR}")
  target_link_libraries(${name} PRIVATE tickclock_tools tickclock_internal Threads::Threads)
  target_compile_options(${name} PRIVATE ${_tickclock_test_warn})
  if(ARGN)
    target_compile_definitions(${name} PRIVATE ${ARGN})
  endif()
  set_target_properties(${name} PROPERTIES CXX_STANDARD ${std} CXX_STANDARD_REQUIRED ON
                                           CXX_EXTENSIONS OFF)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES TIMEOUT 300 LABELS tickclock)
endfunction()

tickclock_test(conv_test "${_tt}/conv_test.cc" 17)
# the portable 32-bit-halves multiply (i686, armv7, MSVC x86 take it)
tickclock_test(conv_noint128_test "${_tt}/conv_test.cc" 17 TICKCLOCK_NO_INT128)
tickclock_test(ratio_test "${_tt}/ratio_test.cc" 17)
tickclock_test(decide_test "${_tt}/decide_test.cc" 17)
tickclock_test(init_race_test "${_tt}/init_race_test.cc" 17)
tickclock_test(cxx_api_test "${_tt}/cxx_api_test.cc" 17)
tickclock_test(cxx11_api_test "${_tt}/cxx_api_test.cc" 11)

# The public header as C99 and as C++11 (no doctest).
set(_c_api_cxx "${CMAKE_CURRENT_BINARY_DIR}/tickclock_tests/c_api_test_as_cxx.cc")
configure_file("${_tt}/c_api_test.c" "${_c_api_cxx}" COPYONLY)
add_executable(c_api_c99_test "${_tt}/c_api_test.c")
add_executable(c_api_cxx11_test "${_c_api_cxx}")
set_target_properties(c_api_c99_test PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
set_target_properties(c_api_cxx11_test PROPERTIES CXX_STANDARD 11 CXX_STANDARD_REQUIRED ON
                                                  CXX_EXTENSIONS OFF)
foreach(_t c_api_c99_test c_api_cxx11_test)
  target_link_libraries(${_t} PRIVATE tickclock_internal Threads::Threads)
  if(MSVC)
    target_compile_options(${_t} PRIVATE /W3)
  else()
    target_compile_options(${_t} PRIVATE -pedantic -Wall -Wextra -Werror)
  endif()
  add_test(NAME ${_t} COMMAND ${_t})
  set_tests_properties(${_t} PROPERTIES TIMEOUT 120 LABELS tickclock)
endforeach()

# The x86 decoder and decider on synthetic leaves (tests/support/x86_leaves.h
# includes fixture_util.h, which needs <dirent.h>).
check_include_file_cxx(dirent.h TICKCLOCK_HAVE_DIRENT_H)
if(TICKCLOCK_HAVE_DIRENT_H)
  foreach(_s cpuid_x86_test fixture_test x86_decide_test decide_limits_test)
    tickclock_test(${_s} "${_tt}/${_s}.cc" 17 _FILE_OFFSET_BITS=64)
  endforeach()
else()
  message(STATUS "tickclock: no <dirent.h>: the x86 fixture suites are not built")
endif()
