# The flags the library's C sources build with (the core and the tools
# library): C99, pedantic, warnings as errors; _GNU_SOURCE for
# secure_getenv, syscall and the Linux clock ids.
TICKCLOCK_C_COPTS = [
    "-std=c99",
    "-pedantic",
    "-Werror",
    "-D_GNU_SOURCE",
]
