# One static library per module under src/, the way Caliper builds its
# services: each names the modules it depends on, and the build, not a
# convention, keeps a module out of another's private headers.
#
#   memsweep_module(NAME
#     [DIRECTORY dir]            # folder under src/ (default: NAME)
#     SOURCES file...
#     [DEPENDS module...]        # memsweep modules its public headers need
#     [PRIVATE_DEPENDS module...]# memsweep modules only its sources need
#     [LIBRARIES target...]      # external libraries its public headers need
#     [PRIVATE_LIBRARIES target...]
#     [INTERFACE_HEADERS file...])# src/DIR headers offered to dependents
#
# The sources keep writing #include "DIR/foo.hpp". The library sees its own
# folder through a build-tree folder holding one symlink, DIR -> src/DIR, on
# its PRIVATE include path; src/ itself is on no module's include path. The
# few INTERFACE_HEADERS it offers get a second build-tree folder with
# symlinks to just those files, on its PUBLIC include path, so a module that
# depends on it sees them and nothing else of src/DIR. The public API
# (include/memsweep/) is on every module's path.

# The headers every module sees: the public API. fmt is in it because every
# module formats its messages with it.
add_library(memsweep_public_headers INTERFACE)
target_include_directories(memsweep_public_headers INTERFACE ${PROJECT_SOURCE_DIR}/include)
target_link_libraries(memsweep_public_headers INTERFACE fmt::fmt)

set(MEMSWEEP_MODULE_VIEWS ${PROJECT_BINARY_DIR}/module_views)

# TARGET sees src/DIR as "DIR/..." (a private view of its own folder).
function(memsweep_private_view target dir)
  set(view ${MEMSWEEP_MODULE_VIEWS}/${target}/private)
  file(MAKE_DIRECTORY ${view})
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${dir} ${view}/${dir} SYMBOLIC)
  target_include_directories(${target} PRIVATE ${view})
endfunction()

function(memsweep_module name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "DIRECTORY"
                        "SOURCES;DEPENDS;PRIVATE_DEPENDS;LIBRARIES;PRIVATE_LIBRARIES;INTERFACE_HEADERS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "memsweep_module(${name}): unknown arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_DIRECTORY)
    set(arg_DIRECTORY ${name})
  endif()
  set(target memsweep_${name})
  add_library(${target} STATIC ${arg_SOURCES})
  add_library(memsweep::${name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES UNITY_BUILD ${MEMSWEEP_UNITY_BUILD})
  memsweep_private_view(${target} ${arg_DIRECTORY})

  # Rebuilt at every configure, so that a header taken off the list is gone.
  set(offered ${MEMSWEEP_MODULE_VIEWS}/${target}/interface)
  file(REMOVE_RECURSE ${offered})
  if(arg_INTERFACE_HEADERS)
    file(MAKE_DIRECTORY ${offered}/${arg_DIRECTORY})
    foreach(header IN LISTS arg_INTERFACE_HEADERS)
      if(NOT EXISTS ${PROJECT_SOURCE_DIR}/src/${arg_DIRECTORY}/${header})
        message(FATAL_ERROR "memsweep_module(${name}): no header src/${arg_DIRECTORY}/${header}")
      endif()
      file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${arg_DIRECTORY}/${header} ${offered}/${arg_DIRECTORY}/${header}
           SYMBOLIC)
    endforeach()
    target_include_directories(${target} PUBLIC ${offered})
  endif()

  list(TRANSFORM arg_DEPENDS PREPEND memsweep_)
  list(TRANSFORM arg_PRIVATE_DEPENDS PREPEND memsweep_)
  target_link_libraries(${target}
    PUBLIC memsweep_public_headers ${arg_DEPENDS} ${arg_LIBRARIES}
    PRIVATE ${arg_PRIVATE_DEPENDS} ${arg_PRIVATE_LIBRARIES} memsweep_warnings)
endfunction()
