# cmake/openblas.cmake: OpenBLAS as the imported target tensorscope::openblas.
#
# OpenBLAS's own CMake package (Debian's libopenblas-dev) sets variables only, OpenBLAS_LIBRARIES
# and OpenBLAS_INCLUDE_DIRS; a target carries them into the library's exported link interface by
# name, so a project using an installed tensorscope finds OpenBLAS again on its machine (this file
# is installed beside the package config, which includes it).
if(NOT TARGET tensorscope::openblas)
  find_package(OpenBLAS REQUIRED)
  add_library(tensorscope::openblas INTERFACE IMPORTED)
  set_target_properties(tensorscope::openblas PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${OpenBLAS_INCLUDE_DIRS}"
    INTERFACE_LINK_LIBRARIES "${OpenBLAS_LIBRARIES}")
endif()
