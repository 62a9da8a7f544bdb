# System libraries (Debian packages, installed by scripts/setup). NVML and the CUDA driver are
# never linked: they are dlopen()ed at run time.
find_package(PkgConfig REQUIRED)
pkg_check_modules(YAML REQUIRED IMPORTED_TARGET yaml-0.1)
pkg_check_modules(JANSSON REQUIRED IMPORTED_TARGET jansson)
pkg_check_modules(SQLITE3 REQUIRED IMPORTED_TARGET sqlite3)
pkg_check_modules(LIBEVENT REQUIRED IMPORTED_TARGET libevent libevent_pthreads)
pkg_check_modules(OPENSSL REQUIRED IMPORTED_TARGET openssl libevent_openssl)
pkg_check_modules(CURL REQUIRED IMPORTED_TARGET libcurl)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
pkg_check_modules(CMOCKA IMPORTED_TARGET cmocka)
find_package(Threads REQUIRED)

# fatia_add_unit_test(NAME SOURCES... LIBS ...): a cmocka test binary registered with CTest,
# label "unit". Every unit test runs from the source directory so fixtures resolve.
function(fatia_add_unit_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} PkgConfig::CMOCKA)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_test(NAME ${name} COMMAND ${name} WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set(labels unit ${T_LABELS})
  set_tests_properties(${name} PROPERTIES LABELS "${labels}" TIMEOUT 300)
endfunction()

# fatia_skip_code_77(): every test of the calling directory reports exit status 77 as Skipped
# (SKIP_RETURN_CODE), never as Passed: a test that cannot run here (no kubectl, no python3, no
# fake library) says so with tests/cli/lib.bash's skip, and CI fails on any skip outside the gpu
# label (scripts/ci-skips). Each CMakeLists.txt that adds tests ends with this call (CMake 3.25's
# set_tests_properties reaches only the current directory's tests); the test ctest_skip_codes
# fails when a test lacks the property, so a new directory cannot forget it.
function(fatia_skip_code_77)
  get_property(tests DIRECTORY PROPERTY TESTS)
  if(tests)
    set_tests_properties(${tests} PROPERTIES SKIP_RETURN_CODE 77)
  endif()
endfunction()
