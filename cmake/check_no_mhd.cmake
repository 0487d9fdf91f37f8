# Only the transport (server/http/) talks to libmicrohttpd: every other
# server file answers through server/http/response.h (and reads forms
# through form.h).  Fails listing each line that names an MHD_ symbol
# outside it (its handles are declared in http/request.h).
# cmake -DSRC=<source tree> -P check_no_mhd.cmake
if(NOT SRC)
  message(FATAL_ERROR "usage: cmake -DSRC=<source tree> -P check_no_mhd.cmake")
endif()
file(GLOB_RECURSE files ${SRC}/server/*.c ${SRC}/server/*.h)
set(bad "")
set(checked 0)
foreach(f ${files})
  if(f MATCHES "/server/http/")
    continue()
  endif()
  math(EXPR checked "${checked} + 1")
  file(STRINGS ${f} lines REGEX "MHD_")
  foreach(l ${lines})
    file(RELATIVE_PATH rel ${SRC} ${f})
    string(APPEND bad "  ${rel}: ${l}\n")
  endforeach()
endforeach()
if(checked LESS 50)
  message(FATAL_ERROR "only ${checked} server files found under ${SRC}/server")
endif()
if(bad)
  message(FATAL_ERROR "libmicrohttpd used outside server/http/ (use response.h / form.h):\n${bad}")
endif()
message(STATUS "${checked} server files outside server/http/ name no MHD_ symbol")
