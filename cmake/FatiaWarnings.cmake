# The warning set of reference/c-style.md §8.2 (every flag compiles with gcc 12 and clang 14).
set(FATIA_WARNINGS
  -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes
  -Wold-style-definition -Wvla -Wwrite-strings -Wformat=2 -Wimplicit-fallthrough
  -Wundef -Wmissing-declarations -Wredundant-decls -Wpointer-arith
  -Werror=implicit-function-declaration -fno-common
  # Schema and option tables list their leading fields and leave the rest zero: the idiom
  # this warning flags. The kernel builds without it for the same reason.
  -Wno-missing-field-initializers)
if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
  list(APPEND FATIA_WARNINGS -Wcast-align=strict)
endif()
if(FATIA_WERROR)
  list(APPEND FATIA_WARNINGS -Werror)
endif()
add_compile_options(${FATIA_WARNINGS})
