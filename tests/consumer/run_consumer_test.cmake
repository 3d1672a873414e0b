# Installs ember from EMBER_SOURCE_DIR into a scratch prefix, then configures, builds and runs
# tests/consumer against it with find_package(ember).
file(REMOVE_RECURSE ${WORK_DIR})
set(build ${WORK_DIR}/ember-build)
set(prefix ${WORK_DIR}/prefix)
macro(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endmacro()
run(${CMAKE_COMMAND} -S ${EMBER_SOURCE_DIR} -B ${build} -DCMAKE_BUILD_TYPE=Release
    -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_BENCH=OFF -DEMBER_BUILD_EXAMPLES=OFF
    -DCMAKE_INSTALL_PREFIX=${prefix})
run(${CMAKE_COMMAND} --build ${build} -j 2)
run(${CMAKE_COMMAND} --install ${build})
run(${CMAKE_COMMAND} -S ${EMBER_SOURCE_DIR}/tests/consumer -B ${WORK_DIR}/consumer-build
    -DCMAKE_PREFIX_PATH=${prefix})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer-build)
run(${WORK_DIR}/consumer-build/consumer)
