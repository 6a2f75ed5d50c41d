/* `mpirun -np N infermeter run ...` (docs/distributed.md): rank i runs the
 * run as --shard i/N into OUT/rank-i, a complete run directory written as
 * it goes; MPI carries the plan's seed and output directory, the common
 * start instant, the clock offsets to rank 0, each later stage's start
 * instant and definition, the stage figures a sweep decides on (below) and
 * the final exit statuses; rank 0 then merges the ranks' directories into
 * OUT (cli/merge.h).
 * A rank that dies aborts the job (OpenMPI); `infermeter merge OUT/rank-*
 * --out OUT --partial` recovers what the ranks wrote. Without MPI in the
 * build, or without mpirun, nothing here does anything. */
#ifndef IM_CLI_MPI_H
#define IM_CLI_MPI_H

#include <stdbool.h>
#include <stdint.h>

#include "run/mpi.h"
#include "run/run.h"

/* Whether this process was launched by mpirun/srun (OMPI_COMM_WORLD_SIZE,
 * PMI_SIZE or PMIX_RANK set), the build has MPI, and no rank's run is in
 * progress yet. */
bool im__mpi_launched(void);
/* The MPI job around a run of o: MPI_Init, the agreements, the rank's run
 * (run, with its own directory, seed, shard and start), the gather and
 * rank 0's merge, MPI_Finalize. The exit status: rank 0's is the merge's
 * (or the worst of a rank's usage/unreachable/engine failure); the
 * others' their own run's. */
int im__mpi_run(const struct im_run_config *o, int (*run)(const struct im_run_config *));

#endif
