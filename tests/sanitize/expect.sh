# Sourced by the plumbing tests of tools/gpu_sanitize.sh and tools/gpu_suite.sh:
#   expect NAME WANTED_EXIT PATTERN COMMAND...
# runs COMMAND, prints "ok" when it exits WANTED_EXIT and its output (stdout and stderr)
# matches the extended regex PATTERN, else "FAIL", the output, and counts it in $fails.
fails=0
expect() {
  local name=$1 want=$2 pat=$3; shift 3
  local got out
  out=$("$@" 2>&1); got=$?
  if [ "$got" -eq "$want" ] && grep -Eq -- "$pat" <<<"$out"; then
    echo "ok   $name (exit $got)"
  else
    echo "FAIL $name: exit $got (want $want), output must match /$pat/:"; echo "$out"; fails=$((fails + 1))
  fi
}
