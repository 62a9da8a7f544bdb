# How the layers link (docs/ARCHITECTURE.md, "How the layers link").
#
# There is no global include path: a library exposes its own headers, and only to the targets that
# link it. fatia_expose_headers(TARGET DIR) gives TARGET a PUBLIC include directory under the
# build tree, build/include/DIR/, that holds one symlink, DIR -> src/DIR. So `#include "base/buf.h"`
# works in every library that links fatia_base (directly or through a PUBLIC dependency), and
# `#include "apiserver/..."` from the model fails to compile: the model does not link the API
# server, so no include directory of its names it.
#
# Rejected: one include directory per header list (installing or copying the public headers
# only): every header edit would need a copy step, and the layers' internal headers (internal.h)
# are only ever included from within their own directory, by relative path, anyway.
function(fatia_expose_headers target dir)
  set(inc ${CMAKE_BINARY_DIR}/include/${dir})
  file(MAKE_DIRECTORY ${inc})
  file(CREATE_LINK ${CMAKE_SOURCE_DIR}/src/${dir} ${inc}/${dir} SYMBOLIC)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY") # headers only (fatia_client)
    target_include_directories(${target} INTERFACE ${inc})
  else()
    target_include_directories(${target} PUBLIC ${inc})
  endif()
endfunction()

# fatia_header_only(TARGET DIR): TARGET may include src/DIR's headers without linking DIR's
# library (the interposer uses base/compat.h, a header of macros, and must not link fatia_base).
function(fatia_header_only target dir)
  target_include_directories(${target} PRIVATE ${CMAKE_BINARY_DIR}/include/${dir})
endfunction()
