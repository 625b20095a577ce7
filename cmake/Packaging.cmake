# SPDX-License-Identifier: GPL-3.0-or-later
# `cmake --install` and `cpack -G DEB` (scripts/package, docs/PACKAGING.md):
# the binary (app/CMakeLists.txt), the desktop entry and icon, the AppStream
# metainfo, the man page, the systemd unit, the copyright file and the
# changelog. The version is project(VERSION) and nothing else.
include(GNUInstallDirs)
# `make install` and cpack install what is built without building the rest
# first: the package needs the binary, the man page and the changelog (all
# built by scripts/package), not the test suites and benchmarks, and
# tests/packaging runs cpack from a build tree that is being tested.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

# ---- the man page: scdoc source, installed gzipped ----
find_program(SCDOC scdoc)
find_program(GZIP gzip REQUIRED)
if(NOT SCDOC)
  message(FATAL_ERROR "scdoc not found: the man page (resources/man/floodgate.1.scd) needs it (scripts/setup installs it)")
endif()
set(FLOODGATE_MAN_SOURCE ${PROJECT_SOURCE_DIR}/resources/man/floodgate.1.scd)
set(FLOODGATE_MAN_PAGE ${PROJECT_BINARY_DIR}/man/floodgate.1)
# gzip -n: no name or time stamp inside, so two builds give the same bytes.
add_custom_command(
  OUTPUT ${FLOODGATE_MAN_PAGE} ${FLOODGATE_MAN_PAGE}.gz
  COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
  COMMAND ${SCDOC} < ${FLOODGATE_MAN_SOURCE} > ${FLOODGATE_MAN_PAGE}
  COMMAND ${GZIP} -n -9 -c ${FLOODGATE_MAN_PAGE} > ${FLOODGATE_MAN_PAGE}.gz
  DEPENDS ${FLOODGATE_MAN_SOURCE}
  COMMENT "Man page floodgate(1)"
  VERBATIM)
add_custom_target(floodgate_man ALL DEPENDS ${FLOODGATE_MAN_PAGE}.gz)
install(FILES ${FLOODGATE_MAN_PAGE}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

# ---- the desktop entry, the icon and the AppStream metainfo ----
install(FILES ${PROJECT_SOURCE_DIR}/resources/floodgate.desktop DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
install(FILES ${PROJECT_SOURCE_DIR}/resources/icons/floodgate.svg DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)
# The release date: SOURCE_DATE_EPOCH when set (scripts/package sets it to
# the last commit's time, for a reproducible package), else today.
string(TIMESTAMP FLOODGATE_RELEASE_DATE "%Y-%m-%d" UTC)
configure_file(${PROJECT_SOURCE_DIR}/resources/metainfo/floodgate.metainfo.xml
               ${PROJECT_BINARY_DIR}/metainfo/io.github.floodgate.Floodgate.metainfo.xml @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/metainfo/io.github.floodgate.Floodgate.metainfo.xml DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo)

# ---- the systemd unit ----
# Where this system's systemd looks (Debian 12: /lib/systemd/system);
# absolute, as systemd does not look under /usr/local.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_get_variable(FLOODGATE_SYSTEMD_DIR_FOUND systemd systemdsystemunitdir)
endif()
if(NOT FLOODGATE_SYSTEMD_DIR_FOUND)
  set(FLOODGATE_SYSTEMD_DIR_FOUND /lib/systemd/system)
endif()
set(FLOODGATE_SYSTEMD_UNIT_DIR ${FLOODGATE_SYSTEMD_DIR_FOUND} CACHE PATH "Where floodgate.service is installed")
install(FILES ${PROJECT_SOURCE_DIR}/resources/systemd/floodgate.service DESTINATION ${FLOODGATE_SYSTEMD_UNIT_DIR})

# ---- the configuration file and logrotate's rule ----
# Read from this path (app/Options.h DefaultConfigFile); both are conffiles.
install(FILES ${PROJECT_SOURCE_DIR}/resources/floodgate.conf DESTINATION /etc/floodgate)
install(FILES ${PROJECT_SOURCE_DIR}/resources/logrotate/floodgate DESTINATION /etc/logrotate.d)

# ---- the copyright file and the changelogs ----
set(FLOODGATE_DOC_DIR ${CMAKE_INSTALL_DATADIR}/doc/floodgate)
string(TIMESTAMP FLOODGATE_CHANGELOG_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
set(FLOODGATE_PACKAGE_MAINTAINER "Floodgate maintainers <maintainers@floodgate.example>" CACHE STRING
    "The package's Maintainer: field (NAME <EMAIL>)")
configure_file(${PROJECT_SOURCE_DIR}/resources/debian/copyright.in ${PROJECT_BINARY_DIR}/debian/copyright @ONLY)
# A native package (version 0.5.0, no Debian revision): changelog.gz is the
# Debian-format changelog; the project's own is beside it as CHANGELOG.md.gz.
configure_file(${PROJECT_SOURCE_DIR}/resources/debian/changelog.in ${PROJECT_BINARY_DIR}/debian/changelog @ONLY)
add_custom_command(
  OUTPUT ${PROJECT_BINARY_DIR}/debian/changelog.gz ${PROJECT_BINARY_DIR}/debian/CHANGELOG.md.gz
  COMMAND ${GZIP} -n -9 -c ${PROJECT_BINARY_DIR}/debian/changelog > ${PROJECT_BINARY_DIR}/debian/changelog.gz
  COMMAND ${GZIP} -n -9 -c ${PROJECT_SOURCE_DIR}/docs/CHANGELOG.md > ${PROJECT_BINARY_DIR}/debian/CHANGELOG.md.gz
  DEPENDS ${PROJECT_BINARY_DIR}/debian/changelog ${PROJECT_SOURCE_DIR}/docs/CHANGELOG.md
  VERBATIM)
add_custom_target(floodgate_changelog ALL DEPENDS ${PROJECT_BINARY_DIR}/debian/changelog.gz ${PROJECT_BINARY_DIR}/debian/CHANGELOG.md.gz)
install(FILES ${PROJECT_BINARY_DIR}/debian/copyright
              ${PROJECT_BINARY_DIR}/debian/changelog.gz
              ${PROJECT_BINARY_DIR}/debian/CHANGELOG.md.gz
        DESTINATION ${FLOODGATE_DOC_DIR})

# ---- the user documentation, beside them ----
# What --help and the man page point to: gzipped as Debian's policy asks of
# documentation over 4 kB (zless reads them); the nginx recipe as it is, to
# copy into /etc/nginx.
set(FLOODGATE_USER_DOCS USER_GUIDE CLI INTERFACE CLUSTER INTEGRATIONS PACKAGING)
set(FLOODGATE_USER_DOCS_GZ)
foreach(doc ${FLOODGATE_USER_DOCS})
  add_custom_command(
    OUTPUT ${PROJECT_BINARY_DIR}/debian/${doc}.md.gz
    COMMAND ${GZIP} -n -9 -c ${PROJECT_SOURCE_DIR}/docs/${doc}.md > ${PROJECT_BINARY_DIR}/debian/${doc}.md.gz
    DEPENDS ${PROJECT_SOURCE_DIR}/docs/${doc}.md
    VERBATIM)
  list(APPEND FLOODGATE_USER_DOCS_GZ ${PROJECT_BINARY_DIR}/debian/${doc}.md.gz)
endforeach()
add_custom_target(floodgate_user_docs ALL DEPENDS ${FLOODGATE_USER_DOCS_GZ})
install(FILES ${FLOODGATE_USER_DOCS_GZ} ${PROJECT_SOURCE_DIR}/docs/nginx-auth-request.conf DESTINATION ${FLOODGATE_DOC_DIR})

# ---- the Debian package ----
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME floodgate)
set(CPACK_PACKAGE_VENDOR "Floodgate")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "HTTP request throttle with a live Qt console")
# The long description; CPack puts the summary above it and indents it.
set(CPACK_PACKAGE_DESCRIPTION
"Floodgate counts every HTTP request per client in time buckets and answers
429 Too Many Requests with an exact Retry-After when a client goes over its
limits, either as a reverse proxy in front of a web application or beside
nginx, Traefik or Envoy as a decision service.

The console shows live traffic, each client's buckets, the access lists,
customer tiers and every refusal with its reason. The same program runs
headless as a sandboxed systemd service (floodgate.service).")
set(CPACK_PACKAGE_CONTACT "${FLOODGATE_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${FLOODGATE_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # floodgate_VERSION_ARCH.deb
set(CPACK_DEBIAN_PACKAGE_RELEASE "")
# Depends: computed by dpkg-shlibdeps from the binary's libraries, never written by hand.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Files under /etc the package ships (the configuration file, logrotate's
# rule) must be conffiles, so an upgrade keeps the operator's edits.
# Installed paths, one each; empty: no conffiles.
set(FLOODGATE_CONFFILES /etc/floodgate/floodgate.conf /etc/logrotate.d/floodgate)
set(FLOODGATE_CONTROL_EXTRA
    ${PROJECT_BINARY_DIR}/debian/postinst ${PROJECT_BINARY_DIR}/debian/prerm ${PROJECT_BINARY_DIR}/debian/postrm)
foreach(script postinst prerm postrm)
  file(COPY ${PROJECT_SOURCE_DIR}/resources/debian/${script} DESTINATION ${PROJECT_BINARY_DIR}/debian
       FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
endforeach()
if(FLOODGATE_CONFFILES)
  list(JOIN FLOODGATE_CONFFILES "\n" conffiles)
  file(WRITE ${PROJECT_BINARY_DIR}/debian/conffiles "${conffiles}\n")
  list(APPEND FLOODGATE_CONTROL_EXTRA ${PROJECT_BINARY_DIR}/debian/conffiles)
endif()
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA "${FLOODGATE_CONTROL_EXTRA}")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
include(CPack)
