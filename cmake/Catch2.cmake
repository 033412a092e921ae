# Catch2 v3: the installed package first; a pinned download only where none is installed.
find_package(Catch2 3 QUIET)
if(Catch2_FOUND)
  message(STATUS "Catch2 ${Catch2_VERSION}: installed package")
else()
  message(STATUS "Catch2 3 not installed: fetching the pinned v3.7.1 (needs network once)")
  include(FetchContent)
  FetchContent_Declare(Catch2
    URL https://github.com/catchorg/Catch2/archive/refs/tags/v3.7.1.tar.gz
    URL_HASH SHA256=c991b247a1a0d7bb9c39aa35faf0fe9e19764213f28ffba3109388e62ee0269c
    DOWNLOAD_EXTRACT_TIMESTAMP TRUE)
  FetchContent_MakeAvailable(Catch2)
  list(APPEND CMAKE_MODULE_PATH "${catch2_SOURCE_DIR}/extras")
endif()
include(Catch)
