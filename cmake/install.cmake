# cmake/install.cmake: tensorscope in another project.
#
#   cmake --install build/dev --prefix ~/opt/tensorscope
#     lib/libtensorscope.a, include/tensorscope/{tensor,ops,nn,profiler}/*.h,
#     lib/cmake/tensorscope/ (the package: find_package(tensorscope CONFIG REQUIRED)),
#     lib/pkgconfig/tensorscope.pc (one g++ line: pkg-config --cflags --libs tensorscope),
#     bin/ts_trace_check, ts_trace_svg, ts_trace_diff (when the executables are built).
#
# The build tree is a package too: find_package(tensorscope) with tensorscope_DIR=build/dev, or
# PKG_CONFIG_PATH=build/dev/pkgconfig. Either way the consumer links tensorscope::tensorscope and
# gets, transitively, what the static library needs: fmt, OpenBLAS, zlib and, in a CUDA build,
# cudart, cuBLAS, cuBLASLt, CUPTI and libdl.
include(CMakePackageConfigHelpers)
set(ts_package_dir ${CMAKE_INSTALL_LIBDIR}/cmake/tensorscope)

install(TARGETS tensorscope EXPORT tensorscopeTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
# Every header of the library's folders: the public ones (ops/ops.h, profiler/profiler.h, nn/*.h,
# tensor/*.h) include others by their path in the tree.
install(DIRECTORY tensor ops nn profiler DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tensorscope
        FILES_MATCHING PATTERN "*.h")
install(EXPORT tensorscopeTargets NAMESPACE tensorscope:: DESTINATION ${ts_package_dir})
export(EXPORT tensorscopeTargets NAMESPACE tensorscope:: FILE ${CMAKE_BINARY_DIR}/tensorscopeTargets.cmake)

# The package config: the same file for the install and the build tree.
configure_package_config_file(cmake/tensorscopeConfig.cmake.in ${CMAKE_BINARY_DIR}/tensorscopeConfig.cmake
                              INSTALL_DESTINATION ${ts_package_dir})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/tensorscopeConfigVersion.cmake COMPATIBILITY SameMinorVersion)
configure_file(cmake/openblas.cmake ${CMAKE_BINARY_DIR}/tensorscope-openblas.cmake COPYONLY)
install(FILES ${CMAKE_BINARY_DIR}/tensorscopeConfig.cmake ${CMAKE_BINARY_DIR}/tensorscopeConfigVersion.cmake
        ${CMAKE_BINARY_DIR}/tensorscope-openblas.cmake DESTINATION ${ts_package_dir})

# pkg-config: the static library's whole link line, libraries by full path (the CUDA ones sit in
# the toolkit's lib64, which is also passed as an rpath so that the program finds them when it runs).
set(ts_pc_libs "${OpenBLAS_LIBRARIES}" "$<TARGET_LINKER_FILE:ZLIB::ZLIB>")
set(ts_pc_cflags "")
if(TS_HAVE_CUDA)
  list(APPEND ts_pc_libs "$<TARGET_LINKER_FILE:CUDA::cublasLt>" "$<TARGET_LINKER_FILE:CUDA::cublas>"
       "$<TARGET_LINKER_FILE:CUDA::cupti>" "$<TARGET_LINKER_FILE:CUDA::cudart>" "-Wl,-rpath,${CUDAToolkit_LIBRARY_DIR}")
  foreach(lib ${CMAKE_DL_LIBS})
    list(APPEND ts_pc_libs "-l${lib}")
  endforeach()
  foreach(dir ${CUDAToolkit_INCLUDE_DIRS})
    string(APPEND ts_pc_cflags " -I${dir}")
  endforeach()
endif()
list(APPEND ts_pc_libs -lpthread)
list(JOIN ts_pc_libs " " TS_PC_PRIVATE_LIBS)
set(TS_PC_CFLAGS "-DTS_HAVE_CUDA=$<BOOL:${TS_HAVE_CUDA}>${ts_pc_cflags}")
foreach(tree install build)
  if(tree STREQUAL "install")
    set(TS_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}/tensorscope")
    set(TS_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
    set(TS_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
    set(pc_out ${CMAKE_BINARY_DIR}/pkgconfig-install/tensorscope.pc)
  else()
    set(TS_PC_INCLUDEDIR "${CMAKE_CURRENT_SOURCE_DIR}")
    set(TS_PC_LIBDIR "$<TARGET_LINKER_FILE_DIR:tensorscope>")
    set(TS_PC_PREFIX "${CMAKE_BINARY_DIR}")
    set(pc_out ${CMAKE_BINARY_DIR}/pkgconfig/tensorscope.pc)
  endif()
  configure_file(cmake/tensorscope.pc.in ${CMAKE_BINARY_DIR}/CMakeFiles/tensorscope-${tree}.pc.in @ONLY)
  file(GENERATE OUTPUT ${pc_out} INPUT ${CMAKE_BINARY_DIR}/CMakeFiles/tensorscope-${tree}.pc.in)
endforeach()
# pkg-config's prefix is the one `cmake --install --prefix` chose: rewritten at install time.
install(CODE "
  file(READ \"${CMAKE_BINARY_DIR}/pkgconfig-install/tensorscope.pc\" pc)
  string(REGEX REPLACE \"^prefix=[^\\n]*\" \"prefix=\${CMAKE_INSTALL_PREFIX}\" pc \"\${pc}\")
  file(WRITE \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig/tensorscope.pc\" \"\${pc}\")
  message(STATUS \"Installing: \$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig/tensorscope.pc\")
")
