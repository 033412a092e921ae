// Lesson 06, task 1: heat_step, mended.
//
// What is checked: the values at every grid of grid_shapes() (profiling_grader.hpp), and the
// contract. The manifest runs task 1's tests under memcheck, initcheck and racecheck as well
// (the check of every pass): a read past the grid, or a missing barrier, fails it even where the
// values come out right.
#include "profiling_grader.hpp"

#include <catch2/catch_test_macros.hpp>

using namespace profiling_grader;

TEST_CASE("Task 1: heat_step is right on every grid", "[task_1]") {
  grader::require_gpu();
  check_every_shape(heat_step_subject("heat_step", heat_step));
}

TEST_CASE("Task 1: heat_step keeps its contract on every grid", "[task_1]") {
  grader::require_gpu();
  check_contract(heat_step_subject("heat_step", heat_step));
}
