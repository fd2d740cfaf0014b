#!/usr/bin/env bash
# mingw-w64 gcc (POSIX threads) for Bazel. gcc for a Windows target appends
# ".exe" to an output named without an extension, and Bazel then cannot find
# the output it asked for; move it back after linking.
/usr/bin/x86_64-w64-mingw32-gcc-posix "$@"
rc=$?
[[ $rc -ne 0 ]] && exit $rc
out=""
args=("$@")
expanded=()
for a in "${args[@]}"; do
  if [[ $a == @* && -f ${a#@} ]]; then
    while IFS= read -r line; do expanded+=("$line"); done < "${a#@}"
  else
    expanded+=("$a")
  fi
done
for ((i = 0; i < ${#expanded[@]}; i++)); do
  if [[ ${expanded[$i]} == "-o" ]]; then out=${expanded[$((i + 1))]}; fi
done
if [[ -n "$out" && ! -e "$out" && -e "$out.exe" ]]; then mv -f "$out.exe" "$out"; fi
exit 0
