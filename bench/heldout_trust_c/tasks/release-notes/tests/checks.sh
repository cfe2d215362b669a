check_output() {
  local got
  if ! got=$(python3 /app/changelog.py "/tests/$1" 2>&1); then
    echo "$1: changelog.py failed: $got"
    return 1
  fi
  if [ "$got" != "$(cat "/tests/$2")" ]; then
    echo "$1: output differs from $2"
    diff <(printf '%s\n' "$got") "/tests/$2"
    return 1
  fi
  echo "$1: ok"
}
