# bash completion for tickclock-probe (installed as
# share/bash-completion/completions/tickclock-probe). The subcommands and
# flags follow the probe's --help texts; tests/cmake/cmake_test.sh checks
# that every one the built probe lists is offered here.

_tickclock_probe() {
  local cur prev words cword
  if declare -F _init_completion >/dev/null 2>&1; then
    _init_completion || return
  else
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
  fi

  local subcommands="report timing validate warp cpuid help"
  local sources="auto system tsc cntvct timebase tod rdtime qpc"
  local reads="all tickclock_now tickclock_now_ordered rdtsc lfence_rdtsc rdtscp clock_gettime clock_gettime_raw clock_gettime_coarse"

  # the subcommand: the first word after the command that is not an option
  local sub="" i
  for ((i = 1; i < cword; i++)); do
    if [[ ${words[i]} != -* ]]; then
      sub=${words[i]}
      break
    fi
  done

  case $prev in
    --seconds)
      return
      ;;
    --source)
      if [[ $sub == timing ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$reads" -- "$cur")
      else
        mapfile -t COMPREPLY < <(compgen -W "$sources" -- "$cur")
      fi
      return
      ;;
    --file | --fixture-out | --svg)
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      return
      ;;
  esac

  local opts
  case $sub in
    "") opts="--json --help --version $subcommands" ;;
    report) opts="--json --help" ;;
    help) opts="report timing validate warp cpuid" ;;
    timing) opts="--seconds --source --json --svg --help" ;;
    validate) opts="--seconds --source --fixture-out --json --help" ;;
    warp) opts="--seconds --source --json --help" ;;
    cpuid) opts="--file --dump --json --help" ;;
    *) opts="--help" ;;
  esac
  mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
}
complete -F _tickclock_probe tickclock-probe
