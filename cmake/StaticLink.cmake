# FIRSTFAULT_STATIC: every dependency from its static archive (Debian 12's -dev packages ship
# them; libzstd-dev, liblz4-dev and libacl1-dev are needed for libarchive's), fmt and spdlog
# compiled in header-only, and glibc itself (-static): the binary has no dynamic section and runs
# on any x86-64 Linux, whatever its glibc (Ubuntu 22.04's 2.35 and RHEL 9's 2.34 were too old for
# a binary that linked glibc dynamically). What a static glibc cannot do is load NSS modules
# (user and host name lookups) or gconv modules: firstfault resolves no names, and libarchive only
# reaches those paths when it writes files to disk, which firstfault never does.
function(firstfault_link_static target)
  set(static_libs re2 yaml-cpp archive zstd lz4 lzma bz2 z nettle acl)
  if(HYPERSCAN_FOUND)
    list(PREPEND static_libs hs)
  endif()
  foreach(lib IN LISTS static_libs)
    find_library(FIRSTFAULT_STATIC_${lib} NAMES lib${lib}.a REQUIRED)
  endforeach()
  target_compile_definitions(${target} PUBLIC FMT_HEADER_ONLY SPDLOG_HEADER_ONLY SPDLOG_FMT_EXTERNAL)
  target_include_directories(${target} PUBLIC ${RE2_INCLUDE_DIRS} ${LIBARCHIVE_INCLUDE_DIRS})
  # Order matters for static archives: users before what they use.
  set(archives "")
  foreach(lib IN LISTS static_libs)
    list(APPEND archives ${FIRSTFAULT_STATIC_${lib}})
  endforeach()
  target_link_libraries(${target} PUBLIC nlohmann_json::nlohmann_json CLI11::CLI11 Threads::Threads
    -Wl,--start-group ${archives} -Wl,--end-group)
  target_link_options(${target} PUBLIC -static)
endfunction()
