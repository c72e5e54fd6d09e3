# Install rules of libhot (included by the top-level CMakeLists.txt when HOT_INSTALL is on):
#   lib/libhot.so.X.Y.Z, libhot.so.X, libhot.so    the shared library (SONAME libhot.so.X)
#   lib/libhot.a                                    the static library (PIC; only hot_* global)
#   include/hot.h, include/hot_types.h              the public API
#   lib/cmake/hot/                                  find_package(hot): hot::hot, hot::hot_static
#   lib/pkgconfig/hot.pc                            pkg-config hot (--static for libhot.a)
#   bin/hot-gen, bin/hot-bench, bin/hot-tune        the tools
# Every path is relative to the prefix given at install time (cmake --install build --prefix P):
# the CMake package and hot.pc locate the prefix from their own location.
include(CMakePackageConfigHelpers)

set(HOT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/hot)
install(TARGETS hot_shared hot_static EXPORT hot-targets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/runtime/include/hot.h ${PROJECT_SOURCE_DIR}/runtime/include/hot_types.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(tool hot-gen hot-bench hot-tune)
  if(TARGET ${tool})
    install(TARGETS ${tool} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()

# --- CMake package ------------------------------------------------------------------------------
install(EXPORT hot-targets NAMESPACE hot:: DESTINATION ${HOT_CMAKE_DIR} FILE hot-targets.cmake)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/hot-config.cmake.in
  ${PROJECT_BINARY_DIR}/package/hot-config.cmake INSTALL_DESTINATION ${HOT_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/hot-config-version.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/hot-config.cmake
              ${PROJECT_BINARY_DIR}/package/hot-config-version.cmake
        DESTINATION ${HOT_CMAKE_DIR})

# --- pkg-config ---------------------------------------------------------------------------------
# prefix is found from hot.pc's own directory (${pcfiledir}), so the file stays right for any
# install prefix. Lua and SQLite: the pkg-config module when hot found it that way, else the
# library file.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(HOT_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(HOT_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  file(RELATIVE_PATH HOT_PC_UP "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
  string(REGEX REPLACE "/$" "" HOT_PC_UP "${HOT_PC_UP}")
  set(HOT_PC_PREFIX "\${pcfiledir}/${HOT_PC_UP}")
  set(HOT_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(HOT_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(HOT_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
set(HOT_PC_REQUIRES_PRIVATE "")
set(HOT_PC_LIBS_PRIVATE "")
if(TARGET PkgConfig::HOT_PC_LUA)
  list(APPEND HOT_PC_REQUIRES_PRIVATE "lua5.4")
else()
  string(APPEND HOT_PC_LIBS_PRIVATE "${HOT_LUA_LIB} ")
endif()
if(TARGET PkgConfig::HOT_PC_SQLITE)
  list(APPEND HOT_PC_REQUIRES_PRIVATE "sqlite3")
else()
  string(APPEND HOT_PC_LIBS_PRIVATE "${HOT_SQLITE_LIB} ")
endif()
string(REPLACE ";" ", " HOT_PC_REQUIRES_PRIVATE "${HOT_PC_REQUIRES_PRIVATE}")
string(APPEND HOT_PC_LIBS_PRIVATE "-lm")
foreach(l IN LISTS CMAKE_DL_LIBS)
  string(APPEND HOT_PC_LIBS_PRIVATE " -l${l}")
endforeach()
string(APPEND HOT_PC_LIBS_PRIVATE " -pthread")
configure_file(${PROJECT_SOURCE_DIR}/cmake/hot.pc.in ${PROJECT_BINARY_DIR}/package/hot.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/package/hot.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
