# How many of the project's GPU gradings may run side by side: ctest's resource spec, which the
# test preset names (CMakePresets.json, resourceSpecFile). Each end-to-end grading asks for one
# slot of the resource "gpus" (RESOURCE_GROUPS gpus:1, grader/tests/CMakeLists.txt), so ctest
# runs at most this many at once while the preset's jobs let the host tests fill the rest.
#
# Side by side is safe for the verdicts: ./grade's per-GPU lock (grader/driver/gpu_lock.py) lets
# correctness phases share the GPU and gives every timed phase the GPU alone. What limits the
# count is memory and cores: a grading's correctness phase holds up to a few GiB of the GPU's
# memory (lesson 04's 2^28-float inputs), and compute-sanitizer's tools run several processes on
# the host. So one slot per 6 GiB of GPU memory (the smallest GPU's, where there are several)
# and per core, at most 12 and at least 2 (two tests grade two submissions at once): an H100 or
# H200 with 16 cores gets 12, an A10 (24 GB) 4, a T4 (16 GB) 2; a GPU in MIG mode, whose slices
# nvidia-smi does not size, 2. On an H100 with 16 cores, 12 gradings side by side kept the CPU
# 28% busy and the GPU 44%, and finished as many tests in the same time as 8 (the per-GPU lock
# decides the pace, not the slots); the class test grades four at a time in four of them.
# Without a GPU every GPU test skips at once, so the count does not matter there: 12. The test
# preset runs 14 tests at once: room for the host tests beside 12 gradings.
#
# WORKBOOK_GPU_TEST_SLOTS, when set, is the count (at least 2). The count chosen is left in
# WORKBOOK_GPU_TEST_SLOT_COUNT.
function(workbook_write_gpu_test_slots file)
  set(slots 12)
  set(why "no GPU visible: GPU tests skip")
  if(DEFINED WORKBOOK_GPU_TEST_SLOTS)
    set(slots ${WORKBOOK_GPU_TEST_SLOTS})
    set(why "WORKBOOK_GPU_TEST_SLOTS")
    if(NOT slots MATCHES "^[0-9]+$" OR slots LESS 2)
      message(FATAL_ERROR "WORKBOOK_GPU_TEST_SLOTS is '${slots}': give a whole number of gradings, 2 or more "
                          "(for example -DWORKBOOK_GPU_TEST_SLOTS=4; two tests grade two at once), or leave it "
                          "out to have it chosen from the GPU's memory and the cores.")
    endif()
  else()
    find_program(WORKBOOK_NVIDIA_SMI nvidia-smi)
    if(WORKBOOK_NVIDIA_SMI)
      execute_process(
        COMMAND "${WORKBOOK_NVIDIA_SMI}" --query-gpu=memory.total,mig.mode.current --format=csv,noheader,nounits
        OUTPUT_VARIABLE listed
        RESULT_VARIABLE smi_result
        ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
      if(smi_result EQUAL 0 AND NOT listed STREQUAL "" AND NOT listed MATCHES "No devices")
        # One line a GPU: "81559, Disabled". The smallest counts (the tests may get any of them).
        string(REPLACE "\n" ";" lines "${listed}")
        set(memory_mib "")
        set(mig FALSE)
        foreach(line IN LISTS lines)
          if(line MATCHES "Enabled")
            set(mig TRUE)
          endif()
          if(line MATCHES "^ *([0-9]+) *,")
            if(memory_mib STREQUAL "" OR CMAKE_MATCH_1 LESS memory_mib)
              set(memory_mib ${CMAKE_MATCH_1})
            endif()
          endif()
        endforeach()
        cmake_host_system_information(RESULT cores QUERY NUMBER_OF_LOGICAL_CORES)
        if(mig OR memory_mib STREQUAL "")
          # A MIG slice has a part of the memory nvidia-smi gives for the whole card; a number
          # that cannot be read is no number to trust. The fewest slots, then.
          set(slots 2)
          set(why "a GPU in MIG mode, or its memory not readable from nvidia-smi: '${listed}'")
        else()
          math(EXPR by_memory "${memory_mib} / 6144")
          set(by_cores ${cores})
          set(slots 12)
          foreach(limit IN ITEMS ${by_memory} ${by_cores})
            if(limit LESS slots)
              set(slots ${limit})
            endif()
          endforeach()
          if(slots LESS 2)  # two tests grade two at once (concurrent gradings, the class)
            set(slots 2)
          endif()
          set(why "${memory_mib} MiB of GPU memory, ${cores} cores")
        endif()
      endif()
    endif()
  endif()
  file(WRITE "${file}"
    "{\"version\": {\"major\": 1, \"minor\": 0}, \"local\": [{\"gpus\": [{\"id\": \"0\", \"slots\": ${slots}}]}]}\n")
  message(STATUS "GPU gradings side by side in the project's tests: ${slots} (${why})")
  set(WORKBOOK_GPU_TEST_SLOT_COUNT ${slots} PARENT_SCOPE)  # grader/tests: the class's share
endfunction()
