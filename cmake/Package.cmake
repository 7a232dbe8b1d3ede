# `cpack -G DEB` in a build directory makes firstfault_<version>_<arch>.deb: the binary, its man
# page, completions, docs/signature-format.md and the license. From the static build (preset
# `static`) it depends on glibc alone; from a normal build, dpkg-shlibdeps lists the libraries.
set(CPACK_PACKAGE_NAME firstfault)
set(CPACK_PACKAGE_VENDOR "firstfault")
set(CPACK_PACKAGE_CONTACT "firstfault maintainers <firstfault@users.noreply.github.com>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Find which rank broke first in a failed distributed training job, and how to fix it")
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/firstfault/firstfault")
if(FIRSTFAULT_STATIC)
  # Fully static (cmake/StaticLink.cmake): the package depends on nothing.
else()
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
endif()
install(FILES ${CMAKE_SOURCE_DIR}/docs/signature-format.md ${CMAKE_SOURCE_DIR}/docs/json-schema.md ${CMAKE_SOURCE_DIR}/LICENSE
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The JSON Schemas of every output, for consumers that validate what they read.
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/schema/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/schema FILES_MATCHING PATTERN "*.schema.json")
include(CPack)
