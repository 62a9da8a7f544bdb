/*
 * base/banned.h: functions fatia code must not call, made into compile errors (git's banned.h).
 *
 * Why each one: unbounded copies (strcpy, strcat, sprintf, vsprintf, gets), truncation without
 * termination (strncpy, strncat), hidden global state (strtok, localtime, gmtime, ctime, asctime,
 * strerror: use fatia_strerror()), no error reporting (atoi, atol, atof: use fatia_parse_*),
 * races (mktemp), the shell (system), and unbounded stack (alloca).
 */
#ifndef FATIA_BASE_BANNED_H
#define FATIA_BASE_BANNED_H

#define FATIA_BANNED(func) sorry_##func##_is_banned_in_fatia

#undef strcpy
#define strcpy(x, y) FATIA_BANNED(strcpy)
#undef strcat
#define strcat(x, y) FATIA_BANNED(strcat)
#undef strncpy
#define strncpy(x, y, n) FATIA_BANNED(strncpy)
#undef strncat
#define strncat(x, y, n) FATIA_BANNED(strncat)
#undef sprintf
#define sprintf(...) FATIA_BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) FATIA_BANNED(vsprintf)
#undef strtok
#define strtok(x, y) FATIA_BANNED(strtok)
#undef gets
#define gets(x) FATIA_BANNED(gets)
#undef atoi
#define atoi(x) FATIA_BANNED(atoi)
#undef atol
#define atol(x) FATIA_BANNED(atol)
#undef atof
#define atof(x) FATIA_BANNED(atof)
#undef localtime
#define localtime(t) FATIA_BANNED(localtime)
#undef gmtime
#define gmtime(t) FATIA_BANNED(gmtime)
#undef ctime
#define ctime(t) FATIA_BANNED(ctime)
#undef asctime
#define asctime(t) FATIA_BANNED(asctime)
#undef strerror
#define strerror(e) FATIA_BANNED(strerror)
#undef mktemp
#define mktemp(x) FATIA_BANNED(mktemp)
#undef system
#define system(x) FATIA_BANNED(system)
#undef alloca
#define alloca(x) FATIA_BANNED(alloca)

#endif
