# Hardening as Debian builds C (dpkg-buildflags with hardening=+all): fortified libc calls, the
# strong stack protector, position-independent executables, full RELRO, and format strings that
# cannot be attacker-controlled. The release preset turns it on (FATIA_HARDEN); the other presets
# leave it off: _FORTIFY_SOURCE needs optimisation, and the sanitizers check more than it does.
option(FATIA_HARDEN "build with Debian's hardening flags (FORTIFY, stack protector, PIE, RELRO)"
       OFF)
if(FATIA_HARDEN)
  # -U first: a toolchain that predefines _FORTIFY_SOURCE would otherwise warn (and -Werror fail)
  # on the redefinition.
  add_compile_options(-U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2 -fstack-protector-strong -Wformat
                      -Werror=format-security)
  include(CheckPIESupported)
  check_pie_supported(LANGUAGES C)
  # CMAKE_POSITION_INDEPENDENT_CODE (on for every target) then links executables with -pie.
  add_link_options(-Wl,-z,relro -Wl,-z,now)
endif()
