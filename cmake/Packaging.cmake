# Debian packages through CPack (scripts/package.sh runs it; README "Install").
# Components, one .deb each:
#   cli       -> sandbox-e2b          the command-line tool (links the library statically)
#   lib       -> libsandbox-e2b0      the shared library
#   dev       -> libsandbox-e2b-dev   headers, the .so link, the static library, sandbox-e2b.pc
#   fake-e2b  -> fake-e2b             the local E2B server and its systemd unit
# Depends of the binaries' own libraries come from dpkg-shlibdeps; the version of
# every package is the project version (the one place it is set).

# The version's other copies (headers, packages) must say the same: a bump that
# forgets one fails here, naming the file.
foreach(spec
        "include/sandbox/common.h|#define SBX_VERSION \"([^\"]+)\""
        "bindings/node/package.json|\"version\": \"([^\"]+)\""
        "bindings/node/.capybara-plugin/plugin.json|\"version\": \"([^\"]+)\""
        "bindings/node/src/plugin.js|  version: '([^']+)'"
        "bindings/python/pyproject.toml|version = \"([^\"]+)\""
        "bindings/python/src/sandbox_e2b/__init__.py|__version__ = \"([^\"]+)\"")
  string(FIND "${spec}" "|" bar)
  string(SUBSTRING "${spec}" 0 ${bar} file)
  math(EXPR bar "${bar} + 1")
  string(SUBSTRING "${spec}" ${bar} -1 re)
  file(STRINGS ${PROJECT_SOURCE_DIR}/${file} lines REGEX "${re}")
  if(NOT lines)
    message(FATAL_ERROR "${file}: no version line matching ${re}")
  endif()
  foreach(line IN LISTS lines)
    string(REGEX MATCH "${re}" _ "${line}")
    if(NOT CMAKE_MATCH_1 STREQUAL PROJECT_VERSION)
      message(FATAL_ERROR "${file} says version ${CMAKE_MATCH_1}, the project (CMakeLists.txt) "
                          "${PROJECT_VERSION}: make them the same")
    endif()
  endforeach()
endforeach()
file(WRITE ${PROJECT_BINARY_DIR}/version.txt "${PROJECT_VERSION}\n")

# The unit: fake-e2b/fake-e2b.service, which fake-e2b/CMakeLists.txt installs as it is (its
# ExecStart names /usr/local/bin, `cmake --install`'s default prefix). For another prefix (the
# package's /usr) a copy naming this prefix's binary is installed over it: install rules run in
# the order they are declared, subdirectories' at their add_subdirectory (policy CMP0082), so
# this one, declared last, wins.
file(READ ${PROJECT_SOURCE_DIR}/fake-e2b/fake-e2b.service SBX_FAKE_UNIT_TEXT)
string(FIND "${SBX_FAKE_UNIT_TEXT}" "ExecStart=/usr/local/bin/fake-e2b " SBX_AT)
if(SBX_AT LESS 0)
  message(FATAL_ERROR "fake-e2b/fake-e2b.service: no 'ExecStart=/usr/local/bin/fake-e2b ' line "
                      "to point at ${CMAKE_INSTALL_FULL_BINDIR}/fake-e2b")
endif()
string(REPLACE "ExecStart=/usr/local/bin/fake-e2b " "ExecStart=${CMAKE_INSTALL_FULL_BINDIR}/fake-e2b "
               SBX_FAKE_UNIT_TEXT "${SBX_FAKE_UNIT_TEXT}")
file(WRITE ${PROJECT_BINARY_DIR}/packaging/fake-e2b.service "${SBX_FAKE_UNIT_TEXT}")
install(FILES ${PROJECT_BINARY_DIR}/packaging/fake-e2b.service DESTINATION lib/systemd/system
        COMPONENT fake-e2b)

# Each package's copyright file (Debian's place for the license): this project's
# license and notice; the packages bundle nothing else.
set(SBX_DEB_NAMES cli sandbox-e2b lib libsandbox-e2b0 dev libsandbox-e2b-dev fake-e2b fake-e2b)
set(SBX_COPYRIGHT ${PROJECT_BINARY_DIR}/packaging/copyright)
file(READ ${PROJECT_SOURCE_DIR}/NOTICE SBX_NOTICE_TEXT)
file(READ ${PROJECT_SOURCE_DIR}/LICENSE SBX_LICENSE_TEXT)
file(WRITE ${SBX_COPYRIGHT} "${SBX_NOTICE_TEXT}\n${SBX_LICENSE_TEXT}")
while(SBX_DEB_NAMES)
  list(POP_FRONT SBX_DEB_NAMES comp pkg)
  install(FILES ${SBX_COPYRIGHT} DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${pkg} COMPONENT ${comp})
endwhile()

set(CPACK_PACKAGE_NAME sandbox-e2b)
set(CPACK_PACKAGE_VENDOR Capybara)
# No public address exists yet: the Maintainer field (required) names the publisher, as the
# plugin manifest does, with a reserved, non-routable domain rather than an invented address.
set(CPACK_PACKAGE_CONTACT "Capybara <sandbox-e2b@capybara.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "sandbox@1 on E2B: a C library, a CLI and a local E2B server")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL cli lib dev fake-e2b)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# dpkg-shlibdeps must find libsandbox-e2b.so.0 in the build tree (the -dev and
# CLI packages are built beside it); the lib package's shlibs file says which
# package provides it.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")

set(CPACK_DEBIAN_CLI_PACKAGE_NAME sandbox-e2b)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION utils)
set(CPACK_COMPONENT_CLI_DESCRIPTION
    "sandbox@1 on E2B from the command line\n The sandbox-e2b tool: create, exec, read and write files in E2B sandboxes (E2B\n cloud, self-hosted or fake-e2b); `sandbox-e2b serve` is the engine of the Node\n and Python packages.")

set(CPACK_DEBIAN_LIB_PACKAGE_NAME libsandbox-e2b0)
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_LIB_DESCRIPTION
    "sandbox@1 on E2B, the C library\n libsandbox-e2b: the sandbox@1 contract backed by E2B's control plane and envd.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libsandbox-e2b-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# The headers include no other library's, but sandbox-e2b.pc's Requires.private
# names these (pkg-config checks they exist, and static linking needs them).
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "libsandbox-e2b0 (= ${PROJECT_VERSION}), libcurl4-openssl-dev | libcurl-dev, libjansson-dev, uuid-dev, libssl-dev")
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "sandbox@1 on E2B, the C library: development files\n Headers, the static library and sandbox-e2b.pc (pkg-config) of libsandbox-e2b.")

set(CPACK_DEBIAN_FAKE-E2B_PACKAGE_NAME fake-e2b)
set(CPACK_DEBIAN_FAKE-E2B_PACKAGE_SECTION net)
# postinst: the unit's API key file, made once (kept on upgrade); the unit is not enabled.
configure_file(${PROJECT_SOURCE_DIR}/packaging/fake-e2b.postinst
               ${PROJECT_BINARY_DIR}/packaging/postinst @ONLY FILE_PERMISSIONS OWNER_READ
               OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(CPACK_DEBIAN_FAKE-E2B_PACKAGE_CONTROL_EXTRA ${PROJECT_BINARY_DIR}/packaging/postinst)
set(CPACK_DEBIAN_FAKE-E2B_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_COMPONENT_FAKE-E2B_DESCRIPTION
    "a local E2B-compatible server\n fake-e2b serves E2B's control plane and envd on one port and runs each sandbox\n in Linux namespaces on this machine (as root; it hosts untrusted code). Ships a\n systemd unit, not enabled on install (systemctl enable --now fake-e2b: port 3000,\n the API key in /etc/fake-e2b/api-key, made on install).")

include(CPack)
