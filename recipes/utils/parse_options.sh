# Kaldi-style option parsing for recipe scripts (our own implementation of the convention).
# Source it after declaring defaults:  nj=4; cmd=utils/local_run.sh; . utils/parse_options.sh
# "--some-option value" sets $some_option (dashes become underscores) if that variable already
# exists; "--config FILE" sources FILE first. Unknown options are an error (exit 1).
while true; do
  [ -z "${1:-}" ] && break
  case "$1" in
    --help|-h)
      if [ -n "${help_message:-}" ]; then printf '%s\n' "$help_message" 1>&2; else echo "see the script header for options" 1>&2; fi
      exit 0 ;;
    --config)
      [ -f "$2" ] || { echo "$0: no such config file: $2" 1>&2; exit 1; }
      . "$2"; shift 2 ;;
    --*=*)
      __name=$(echo "${1%%=*}" | sed 's/^--//; s/-/_/g')
      eval "__exists=\${$__name+x}"
      [ -n "$__exists" ] || { echo "$0: invalid option ${1%%=*}" 1>&2; exit 1; }
      eval "$__name=\"\${1#*=}\""; shift 1 ;;
    --*)
      __name=$(echo "$1" | sed 's/^--//; s/-/_/g')
      eval "__exists=\${$__name+x}"
      [ -n "$__exists" ] || { echo "$0: invalid option $1" 1>&2; exit 1; }
      [ $# -ge 2 ] || { echo "$0: option $1 needs a value" 1>&2; exit 1; }
      eval "$__name=\"\$2\""; shift 2 ;;
    *) break ;;
  esac
done
unset __name __exists
true
