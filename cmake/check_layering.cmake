# A library may include the public headers of the libraries beneath it and
# no others.  This compiles two probes with exactly the include path a
# library's own sources get (-DINCS, '|'-separated): one naming a header
# the library may use (the control: must compile), one naming a header of
# a library above it or beside it (must be refused as not found, so a
# back edge fails to build).
# cmake -DCC=<compiler> -DINCS=<dirs> -DALLOWED=<hdr> -DREFUSED=<hdr>
#       -DNAME=<case> -DOUT=<scratch dir> -P check_layering.cmake
foreach(v CC INCS ALLOWED REFUSED NAME OUT)
  if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "")
    message(FATAL_ERROR "check_layering.cmake: -D${v}= is required")
  endif()
endforeach()
string(REPLACE "|" ";" dirs "${INCS}")
set(flags -fsyntax-only -D_GNU_SOURCE -std=c11)
foreach(d ${dirs})
  list(APPEND flags "-I${d}")
endforeach()
set(dir ${OUT}/${NAME})
file(REMOVE_RECURSE ${dir})
file(MAKE_DIRECTORY ${dir})

file(WRITE ${dir}/allowed.c "#include \"${ALLOWED}\"\nint strata_probe(void);\nint strata_probe(void) { return 0; }\n")
execute_process(COMMAND ${CC} ${flags} ${dir}/allowed.c RESULT_VARIABLE rc ERROR_VARIABLE err
                OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NAME}: the control include \"${ALLOWED}\" does not compile:\n${err}")
endif()

file(WRITE ${dir}/refused.c "#include \"${REFUSED}\"\nint strata_probe(void);\nint strata_probe(void) { return 0; }\n")
execute_process(COMMAND ${CC} ${flags} ${dir}/refused.c RESULT_VARIABLE rc ERROR_VARIABLE err
                OUTPUT_VARIABLE out)
if(rc EQUAL 0)
  message(FATAL_ERROR "${NAME}: \"${REFUSED}\" compiles with this library's include path: "
                      "a back edge would build")
endif()
string(FIND "${err}" "${REFUSED}: No such file" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${NAME}: \"${REFUSED}\" failed for another reason than not being "
                      "visible:\n${err}")
endif()
file(REMOVE_RECURSE ${dir})
message(STATUS "${NAME}: \"${ALLOWED}\" compiles, \"${REFUSED}\" is refused")
