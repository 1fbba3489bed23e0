# shellcheck shell=bash
# Shell helpers for the test scripts that start a server; sourced, never run:
#   . "$ROOT/tests/lib/serve.sh"        (ROOT: the checkout, found from the script's own directory)
# Needs only bash and coreutils.

# serve_addr LOG PID [SECONDS] [ERR]: waits for the server PID, whose stdout goes to LOG, to print
# its first line "listening on ADDR", and prints ADDR: host:port from `gpucast serve`, a port from
# tests/k8s/stub_apiserver.py. Waits at most SECONDS (default 10). Returns 1, after writing to stderr what
# went wrong (LOG named: PID exited first, or no such line in time) and the last lines of LOG and of
# ERR (the server's stderr, if given), when PID exits first or the time runs out.
# Use: URL=http://$(serve_addr "$T/out" "$PID" 10 "$T/err") || fail "..."
serve_addr() {
  local log=$1 pid=$2 secs=${3:-10} err=${4:-} addr gone="" why f end
  end=$(($(date +%s%N) + secs * 1000000000))
  while :; do
    kill -0 "$pid" 2>/dev/null || gone=1  # before reading LOG: a server that printed and exited is seen
    addr=$(sed -n '/^listening on /{s///p;q}' "$log" 2>/dev/null)
    if [ -n "$addr" ]; then
      printf '%s\n' "$addr"
      return 0
    fi
    if [ -n "$gone" ]; then
      why="exited before printing 'listening on'"
      break
    fi
    if [ "$(date +%s%N)" -ge "$end" ]; then
      why="printed no 'listening on' line within $secs s"
      break
    fi
    sleep 0.1
  done
  {
    echo "serve_addr: the server (pid $pid) $why in $log"
    for f in "$log" ${err:+"$err"}; do
      echo "serve_addr: last 20 lines of $f:"
      tail -n 20 "$f" 2>/dev/null | sed 's/^/  /'
    done
  } >&2
  return 1
}
