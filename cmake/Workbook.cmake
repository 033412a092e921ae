# The two functions that turn the lesson manifest into targets.
#
#   workbook_add_lesson(<slug>)
#       The lesson's own targets: its grader tests (an object library, compiled once), the
#       code it gives students (lessons/<slug>/*.cu, a library every tree links: lesson 05's
#       kernels) and its worked examples (lessons/<slug>/examples/*.cu, one program each).
#
#   workbook_add_tree(<name> <dir> [SWEEPS] [LESSONS <slug>...])
#       A tree laid out like exercises/: for each lesson present in <dir>, a library of the
#       student's code and the grader program grade_<slug>__<name> that tests it. With
#       SWEEPS, also the sweep program sweep_<slug>__<name> of each lesson that has one
#       (tools/bench/<slug>.cu), which ./sweep runs, linked with sweep_<slug>_link too when
#       tools/bench/CMakeLists.txt defines it (lesson 05: the grader's tracer).
#
# The grader finds the programs through ${CMAKE_BINARY_DIR}/workbook_build.json, written by
# workbook_write_build_index() at the end of the top-level CMakeLists.txt.

set(WORKBOOK_MANIFEST "${PROJECT_SOURCE_DIR}/lessons/manifest.json")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${WORKBOOK_MANIFEST}")
file(READ "${WORKBOOK_MANIFEST}" WORKBOOK_MANIFEST_JSON)

# Sets <out_slugs> to the lesson slugs in manifest order.
function(workbook_manifest_lessons out_slugs)
  string(JSON count LENGTH "${WORKBOOK_MANIFEST_JSON}" lessons)
  set(slugs "")
  if(count GREATER 0)
    math(EXPR last "${count} - 1")
    foreach(i RANGE ${last})
      string(JSON slug GET "${WORKBOOK_MANIFEST_JSON}" lessons ${i} slug)
      list(APPEND slugs "${slug}")
    endforeach()
  endif()
  set(${out_slugs} "${slugs}" PARENT_SCOPE)
endfunction()

# Sets <out_sources> to the student source files of lesson <slug>, as the manifest lists them.
function(workbook_lesson_sources slug out_sources)
  string(JSON count LENGTH "${WORKBOOK_MANIFEST_JSON}" lessons)
  math(EXPR last "${count} - 1")
  foreach(i RANGE ${last})
    string(JSON this_slug GET "${WORKBOOK_MANIFEST_JSON}" lessons ${i} slug)
    if(this_slug STREQUAL slug)
      string(JSON n LENGTH "${WORKBOOK_MANIFEST_JSON}" lessons ${i} sources)
      math(EXPR n_last "${n} - 1")
      set(sources "")
      foreach(j RANGE ${n_last})
        string(JSON file GET "${WORKBOOK_MANIFEST_JSON}" lessons ${i} sources ${j})
        list(APPEND sources "${file}")
      endforeach()
      set(${out_sources} "${sources}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  message(FATAL_ERROR "lesson '${slug}' is not in ${WORKBOOK_MANIFEST}")
endfunction()

function(workbook_add_lesson slug)
  set(grader_dir "${PROJECT_SOURCE_DIR}/grader/${slug}")
  file(GLOB grader_sources CONFIGURE_DEPENDS "${grader_dir}/*.cu" "${grader_dir}/*.cpp")
  if(NOT grader_sources)
    message(FATAL_ERROR "lesson ${slug}: no grader tests in ${grader_dir}")
  endif()
  add_library(grader_${slug}_tests OBJECT ${grader_sources})
  target_include_directories(grader_${slug}_tests PUBLIC "${PROJECT_SOURCE_DIR}/lessons/${slug}")
  target_link_libraries(grader_${slug}_tests PUBLIC workbook_grader_support)
  # A lesson's own link requirements for its grader programs (lesson 03: the cuBLAS spy):
  # grader/<slug>/grader.cmake adds them to the interface library ${link}.
  set(link grader_${slug}_link)
  add_library(${link} INTERFACE)
  include("${grader_dir}/grader.cmake" OPTIONAL)

  file(GLOB given CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/lessons/${slug}/*.cu")
  if(given)
    add_library(lesson_${slug} STATIC ${given})
    target_include_directories(lesson_${slug} PUBLIC "${PROJECT_SOURCE_DIR}/lessons/${slug}")
    target_link_libraries(lesson_${slug} PUBLIC workbook::common)
    # -lineinfo, as for the student's code: the lesson's kernels (05's transform and smooth) are the
    # ones a sanitizer report names when the student's host code misuses their buffers.
    target_compile_options(lesson_${slug} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)
    target_link_libraries(grader_${slug}_tests PUBLIC lesson_${slug})
  endif()

  file(GLOB examples CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/lessons/${slug}/examples/*.cu")
  foreach(example IN LISTS examples)
    get_filename_component(name "${example}" NAME_WE)
    add_executable(example_${slug}_${name} "${example}")
    target_link_libraries(example_${slug}_${name} PRIVATE workbook::common CUDA::cublas CUDA::curand)
    if(TARGET lesson_${slug})
      target_link_libraries(example_${slug}_${name} PRIVATE lesson_${slug})
    endif()
    if(WORKBOOK_BUILD_TESTS)
      # Examples quoted in a lesson must run: exit 0, or 77 (skipped) without a GPU. Under the GPU
      # lock, shared, beside the gradings (WORKBOOK_GPU_TEST_LAUNCHER, the top CMakeLists.txt).
      add_test(NAME lessons.${slug}.example_${name}
        COMMAND ${WORKBOOK_GPU_TEST_LAUNCHER} $<TARGET_FILE:example_${slug}_${name}>)
      set_tests_properties(lessons.${slug}.example_${name} PROPERTIES SKIP_RETURN_CODE 77)
    endif()
  endforeach()
endfunction()

function(workbook_add_tree name dir)
  cmake_parse_arguments(PARSE_ARGV 2 arg "SWEEPS" "" "LESSONS")
  get_filename_component(dir "${dir}" ABSOLUTE BASE_DIR "${PROJECT_SOURCE_DIR}")
  if(arg_LESSONS)
    set(slugs ${arg_LESSONS})
  else()
    workbook_manifest_lessons(slugs)
  endif()
  set(entries "")
  set(sweeps "")
  foreach(slug IN LISTS slugs)
    if(NOT IS_DIRECTORY "${dir}/${slug}")
      continue()  # the grader reports the lesson as missing from this tree
    endif()
    workbook_lesson_sources(${slug} files)
    list(TRANSFORM files PREPEND "${dir}/${slug}/")
    set(impl impl_${slug}__${name})
    add_library(${impl} STATIC ${files})
    target_include_directories(${impl} PUBLIC "${PROJECT_SOURCE_DIR}/lessons/${slug}")
    target_link_libraries(${impl} PUBLIC workbook::common CUDA::cublas CUDA::curand)
    if(TARGET lesson_${slug})
      target_link_libraries(${impl} PUBLIC lesson_${slug})
    endif()
    # -lineinfo: compute-sanitizer and crash reports can name the student's source line.
    target_compile_options(${impl} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)

    set(grader grade_${slug}__${name})
    add_executable(${grader} $<TARGET_OBJECTS:grader_${slug}_tests>)
    target_link_libraries(${grader} PRIVATE ${impl} workbook_grader_main grader_${slug}_link)
    string(APPEND entries "\"${slug}\": \"$<TARGET_FILE:${grader}>\", ")

    set(sweep_source "${PROJECT_SOURCE_DIR}/tools/bench/${slug}.cu")
    if(arg_SWEEPS AND EXISTS "${sweep_source}")
      set(sweep sweep_${slug}__${name})
      add_executable(${sweep} "${sweep_source}")
      # The lesson's benchmark declaration (grader/<slug>/benchmark.hpp), shared with its grader.
      target_include_directories(${sweep} PRIVATE "${PROJECT_SOURCE_DIR}/grader/${slug}")
      target_link_libraries(${sweep} PRIVATE ${impl} workbook_bench)
      if(TARGET sweep_${slug}_link)  # a lesson's own needs (05: the tracer), from tools/bench/CMakeLists.txt
        target_link_libraries(${sweep} PRIVATE sweep_${slug}_link)
      endif()
      string(APPEND sweeps "\"${slug}\": \"$<TARGET_FILE:${sweep}>\", ")
    endif()
  endforeach()
  string(REGEX REPLACE ", $" "" entries "${entries}")
  string(REGEX REPLACE ", $" "" sweeps "${sweeps}")
  set_property(GLOBAL APPEND PROPERTY WORKBOOK_TREE_ENTRIES
    "\"${name}\": {\"dir\": \"${dir}\", \"lessons\": {${entries}}, \"sweeps\": {${sweeps}}}")
endfunction()

function(workbook_write_build_index)
  get_property(trees GLOBAL PROPERTY WORKBOOK_TREE_ENTRIES)
  list(JOIN trees ", " trees_json)
  find_program(WORKBOOK_COMPUTE_SANITIZER compute-sanitizer HINTS "${CUDAToolkit_BIN_DIR}")
  set(sanitizer "")
  if(WORKBOOK_COMPUTE_SANITIZER)
    set(sanitizer "${WORKBOOK_COMPUTE_SANITIZER}")
  endif()
  file(GENERATE OUTPUT "${CMAKE_BINARY_DIR}/workbook_build.json" CONTENT
"{
  \"source_dir\": \"${PROJECT_SOURCE_DIR}\",
  \"device_info\": \"$<TARGET_FILE:workbook_device_info>\",
  \"compute_sanitizer\": \"${sanitizer}\",
  \"cuda_architectures\": \"${CMAKE_CUDA_ARCHITECTURES}\",
  \"trees\": {${trees_json}}
}
")
endfunction()
