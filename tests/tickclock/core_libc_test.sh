#!/usr/bin/env bash
# What the core asks of libc, file by file (nm -u of each object compiled
# here): the async-signal-safe paths format with the library's own
# formatter, allocate only into slots reserved in advance, and read no
# file. So:
#   - no printf-family function anywhere but fprintf in init.c (the one
#     report of a bad TICKCLOCK_SOURCE, at initialisation);
#   - malloc/calloc/realloc only in publish.c (slots, in the calls that
#     may allocate);
#   - open/read only in the platform files, and no stdio stream anywhere
#     (fopen allocates, and in a process that never called malloc sets it
#     up: the first use would pay for both).
#   core_libc_test.sh CC FILE.c...
set -uo pipefail
cc=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
checked=0
for src in "$@"; do
  case "$src" in *.c) ;; *) continue ;; esac
  base=$(basename "$src" .c)
  if ! "$cc" -std=c99 -D_GNU_SOURCE -O2 -I"$(dirname "$src")" -c "$src" -o "$tmp/$base.o" 2>"$tmp/err"; then
    echo "FAIL: $base.c does not compile here"; cat "$tmp/err"; fail=1; continue
  fi
  checked=$((checked + 1))
  undef=$(nm -u "$tmp/$base.o" | awk '{print $NF}')
  fmt=$(echo "$undef" | grep -E 'printf' || true)
  if [[ -n "$fmt" && ! ( "$base" == init && "$fmt" == fprintf ) ]]; then
    echo "FAIL: $base.c calls libc formatting: $(echo $fmt)"; fail=1
  fi
  alloc=$(echo "$undef" | grep -E '^(malloc|calloc|realloc)$' || true)
  if [[ -n "$alloc" && "$base" != publish ]]; then
    echo "FAIL: $base.c allocates: $(echo $alloc)"; fail=1
  fi
  stdio=$(echo "$undef" | grep -E '^(fopen|fopen64|fdopen|freopen|popen|tmpfile|tmpfile64|fgets|fgets_unlocked|fgetc|fgetc_unlocked|getc|getc_unlocked|_IO_getc|fread|fread_unlocked|fscanf|__isoc99_fscanf|__isoc23_fscanf|getline|getdelim|__getdelim)$' || true)
  if [[ -n "$stdio" ]]; then
    echo "FAIL: $base.c reads through stdio: $(echo $stdio)"; fail=1
  fi
  io=$(echo "$undef" | grep -E '^(open|open64|openat|read)$' || true)
  if [[ -n "$io" && "$base" != platform_posix && "$base" != platform_pages && "$base" != platform_windows ]]; then
    echo "FAIL: $base.c reads files: $(echo $io)"; fail=1
  fi
done
if [[ $checked -lt 10 ]]; then echo "FAIL: only $checked core files checked"; fail=1; fi
if [[ $fail -eq 0 ]]; then echo "ok: $checked core files: no libc formatting (but init's fprintf), allocation only in publish.c, file reads only in the OS code (platform_posix.c, platform_pages.c, platform_windows.c) and never through stdio"; fi
if [[ $fail -eq 0 ]]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
exit $fail
