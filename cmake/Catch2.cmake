# Catch2 v3: the installed package first; else the pinned release, downloaded once when the
# network answers; else configuring stops at once, saying what was found, why it is not
# enough and how to install Catch2 3 (not a minute and a half of download retries).
#
#   -DFETCHCONTENT_SOURCE_DIR_CATCH2=<dir>   an unpacked Catch2 v3 source tree to use offline
#   -DWORKBOOK_CATCH2_URL=<url>              where the pinned release comes from
set(WORKBOOK_CATCH2_URL "https://github.com/catchorg/Catch2/archive/refs/tags/v3.7.1.tar.gz"
    CACHE STRING "Where the pinned Catch2 v3.7.1 comes from when none is installed")
set(_workbook_catch2_sha256 c991b247a1a0d7bb9c39aa35faf0fe9e19764213f28ffba3109388e62ee0269c)

find_package(Catch2 3 QUIET)
if(Catch2_FOUND)
  message(STATUS "Catch2 ${Catch2_VERSION}: installed package")
else()
  # What the search found instead, for the message (Debian 12 and Ubuntu 22.04 ship Catch2 2).
  set(_workbook_catch2_seen "no Catch2 package at all")
  if(Catch2_CONSIDERED_CONFIGS)
    set(_workbook_catch2_seen "")
    foreach(config version IN ZIP_LISTS Catch2_CONSIDERED_CONFIGS Catch2_CONSIDERED_VERSIONS)
      string(APPEND _workbook_catch2_seen "${_workbook_catch2_sep}Catch2 ${version} in ${config}")
      set(_workbook_catch2_sep "; ")
    endforeach()
  endif()

  set(_workbook_catch2_archive "${CMAKE_BINARY_DIR}/_deps/catch2-v3.7.1.tar.gz")
  set(_workbook_catch2_problem "")
  if(NOT FETCHCONTENT_SOURCE_DIR_CATCH2 AND NOT EXISTS "${_workbook_catch2_archive}")
    message(STATUS "Catch2 3 is not installed (found: ${_workbook_catch2_seen}); downloading the pinned v3.7.1")
    file(DOWNLOAD "${WORKBOOK_CATCH2_URL}" "${_workbook_catch2_archive}.part"
         TIMEOUT 120 INACTIVITY_TIMEOUT 15 STATUS _workbook_catch2_status)
    list(GET _workbook_catch2_status 0 _workbook_catch2_code)
    if(_workbook_catch2_code EQUAL 0)
      file(SHA256 "${_workbook_catch2_archive}.part" _workbook_catch2_got)
      if(_workbook_catch2_got STREQUAL _workbook_catch2_sha256)
        file(RENAME "${_workbook_catch2_archive}.part" "${_workbook_catch2_archive}")
      else()
        set(_workbook_catch2_problem "the download of ${WORKBOOK_CATCH2_URL} is not the pinned release (SHA-256 differs)")
      endif()
    else()
      list(GET _workbook_catch2_status 1 _workbook_catch2_why)
      set(_workbook_catch2_problem "the download of ${WORKBOOK_CATCH2_URL} failed: ${_workbook_catch2_why}")
    endif()
    file(REMOVE "${_workbook_catch2_archive}.part")
  endif()

  if(_workbook_catch2_problem)
    message(FATAL_ERROR
      "Catch2 3 is needed to build the grader and the tests, and it is not installed (found: "
      "${_workbook_catch2_seen}). Catch2 2 will not do: the grader's report listener and SKIP() exist in "
      "Catch2 3 only. The pinned v3.7.1 could not be fetched either: ${_workbook_catch2_problem}.\n"
      "Install Catch2 3, then configure again (README.md, Quick start, lists the same):\n"
      "  Ubuntu 24.04, Debian 13:  sudo apt install catch2\n"
      "  Debian 12:                add bookworm-backports to apt's sources, then\n"
      "                            sudo apt install -t bookworm-backports libcatch2-dev\n"
      "  anywhere, offline:        unpack ${WORKBOOK_CATCH2_URL} (fetched elsewhere) and configure with\n"
      "                            -DFETCHCONTENT_SOURCE_DIR_CATCH2=<the unpacked folder>")
  endif()

  include(FetchContent)
  FetchContent_Declare(Catch2
    URL "${_workbook_catch2_archive}"
    URL_HASH SHA256=${_workbook_catch2_sha256}
    DOWNLOAD_EXTRACT_TIMESTAMP TRUE)
  FetchContent_MakeAvailable(Catch2)
  list(APPEND CMAKE_MODULE_PATH "${catch2_SOURCE_DIR}/extras")
endif()
include(Catch)
