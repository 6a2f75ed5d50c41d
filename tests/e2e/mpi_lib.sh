# Shared by the MPI end-to-end tests (test_mpi.sh, test_mpi_sweep.sh),
# sourced after lib.sh with the test's name in MPI_TEST: skips (77) without
# jq, without mpirun or without MPI in the build; sets MPIRUN (two ranks on
# two cores: --oversubscribe, and no binding of a rank's threads to one
# core) and okrc (exit 0, or 3 when a busy machine makes the self-check
# INVALID).
command -v jq >/dev/null || exit 77
if ! command -v mpirun >/dev/null; then
  echo "$MPI_TEST: skipped: no mpirun (Debian: openmpi-bin)" >&2
  exit 77
fi
if ! ldd "$BIN" 2>/dev/null | grep -q libmpi; then
  echo "$MPI_TEST: skipped: $BIN was built without MPI (-DINFERMETER_MPI=ON)" >&2
  exit 77
fi
# As root OpenMPI wants both. OpenMPI's own allocations are not ours to
# report.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
MPIRUN=(timeout -k 5 150 mpirun --allow-run-as-root --oversubscribe --bind-to none)
okrc() { [ "$1" -eq 0 ] || [ "$1" -eq 3 ]; }

# mpi_kill_when OUT RANK COND...: once COND succeeds (tried every 0.1 s for
# up to 60 s), kills rank RANK of the job running with --out OUT (SIGKILL)
# and prints its pid; prints nothing when it never found it.
mpi_kill_when() {
  local out=$1 rank=$2 pid= p
  shift 2
  for _ in $(seq 600); do
    if [ -z "$pid" ] && "$@" >/dev/null 2>&1; then
      for p in $(pgrep -f -- "--out $out"); do
        grep -qz "^OMPI_COMM_WORLD_RANK=$rank\$" "/proc/$p/environ" 2>/dev/null && pid=$p
      done
    fi
    [ -n "$pid" ] && break
    sleep 0.1
  done
  [ -n "$pid" ] && kill -KILL "$pid"
  echo "$pid"
}

# mpi_check_aborted MPIRUN_PID NOUN: after a rank was killed, the job ends
# with a failure status and `merge --partial` of $TMP/kill exits 130 and
# names shard 1 (NOUN: "job" or "sweep", in the check messages).
mpi_check_aborted() {
  local rc
  wait "$1"
  rc=$?
  check "the job ends with a failure status when a rank dies${2:+ in a $2} ($rc)" test $rc -ne 0
  "$BIN" merge "$TMP/kill/rank-0" "$TMP/kill/rank-1" --out "$TMP/kill" --partial --quiet 2>/dev/null
  check_eq "merge of an aborted $2: exit 130" "$?" 130
  # Rank 0 may be cut short too (mpirun kills it when the job aborts).
  check "merge of an aborted $2: shard 1 named cut short" \
    jq -e '(.manifest.merged.cut_short | index(1)) != null and
           (.manifest.merged.incomplete | test("^shards? (0, )?1 cut short$"))' "$TMP/kill/results.json"
}
