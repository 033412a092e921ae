# Lesson 07's host-side tests (no GPU needed): the histogram's input and its counts on the host,
# which every verdict of task 2 rests on. baselines.cu is compiled again for them: its host
# functions are what is tested, its kernels are never launched here.
if(WORKBOOK_BUILD_TESTS)
  add_executable(grader_07_monte_carlo_host_tests "${grader_dir}/tests/baselines_test.cpp" "${grader_dir}/baselines.cu")
  target_include_directories(grader_07_monte_carlo_host_tests PRIVATE "${grader_dir}" "${PROJECT_SOURCE_DIR}/lessons/${slug}")
  target_link_libraries(grader_07_monte_carlo_host_tests PRIVATE workbook::common CUDA::curand Catch2::Catch2WithMain)
  catch_discover_tests(grader_07_monte_carlo_host_tests TEST_PREFIX "grader.07_monte_carlo." DISCOVERY_MODE PRE_TEST
    PROPERTIES SKIP_RETURN_CODE 4)
endif()
