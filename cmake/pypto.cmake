# Shared compile settings for every project target.
add_library(pypto_warnings INTERFACE)
target_compile_options(pypto_warnings INTERFACE -Wall -Wextra)
# Include paths are relative to the repository root, as in "artifact/build_dir.h".
add_library(pypto_root_include INTERFACE)
target_include_directories(pypto_root_include INTERFACE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/include)

# pypto_add_library(name SOURCES ... DEPS ...)
function(pypto_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_link_libraries(${name} PUBLIC pypto_root_include ${ARG_DEPS} PRIVATE pypto_warnings)
endfunction()

# pypto_add_test(name SOURCES ... DEPS ...): one GoogleTest binary, tests discovered by ctest.
function(pypto_add_test name)
  if(NOT PYPTO_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main pypto_warnings)
  target_compile_definitions(${name} PRIVATE
    PYPTO_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    PYPTO_BINARY_DIR="${PROJECT_BINARY_DIR}")
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 300)
endfunction()

# pypto_component(name DIR dir DEPS ...): the component's library from dir/*.cc
# and its unit tests from dir/*_test.cc (LevelDB style: a test file beside each).
function(pypto_component name)
  cmake_parse_arguments(ARG "" "DIR" "DEPS;TEST_DEPS" ${ARGN})
  file(GLOB all_sources CONFIGURE_DEPENDS ${ARG_DIR}/*.cc)
  file(GLOB test_sources CONFIGURE_DEPENDS ${ARG_DIR}/*_test.cc)
  set(lib_sources ${all_sources})
  if(test_sources)
    list(REMOVE_ITEM lib_sources ${test_sources})
  endif()
  list(FILTER lib_sources EXCLUDE REGEX ".*_main\\.cc$")
  if(NOT lib_sources)
    message(WARNING "${name}: no sources in ${ARG_DIR} yet")
    return()
  endif()
  pypto_add_library(${name} SOURCES ${lib_sources} DEPS ${ARG_DEPS})
  if(test_sources)
    pypto_add_test(${name}_tests SOURCES ${test_sources} DEPS ${name} ${ARG_TEST_DEPS})
  endif()
endfunction()
