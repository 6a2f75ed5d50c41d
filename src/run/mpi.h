/* A run under mpirun (docs/distributed.md): this process's place in the
 * job, set by the process's MPI launcher (cli/mpi.c) before im_run, and
 * the exchanges at every stage boundary (run/mpi_stage.c). Without MPI in
 * the build, or without mpirun, im__mpi.on is false and nothing here does
 * anything. */
#ifndef IM_RUN_MPI_H
#define IM_RUN_MPI_H

#include <stdbool.h>
#include <stdint.h>

/* This process's place in the MPI job (on: launched by mpirun and inside
 * the rank's run). Written once by im__mpi_run before the run starts. */
struct im__mpi_state {
  bool on;
  int rank, size;
  int64_t offset_ns;      /* rank 0's wall clock minus this rank's (the
                             exchange of least round trip) */
  int64_t rtt_ns;         /* that exchange's round trip: |error| <= rtt/2 */
  int64_t correction_ns;  /* added to the agreed start (rank 0's clock) to
                             get this machine's CLOCK_REALTIME of it */
  bool verbose;           /* rank 0 says what it decides (no --quiet) */
};
extern struct im__mpi_state im__mpi;

/* Stages (run/mpi_stage.c): every stage boundary is an exchange in which
 * every rank takes part. Stage i ends: this rank's stage (its lines of
 * stages.jsonl and requests.jsonl, already on disk) goes to rank 0, which
 * merges the ranks' (counters added, histograms merged exactly, samples
 * joined, records on the common clock) and analyses the union as one
 * process analyses its stage; the figures that steer a sweep (throughput,
 * SLOs, over-saturation) replace *res on every rank, so every rank takes
 * the same decision. Stage i > 0 begins: rank 0's definition of the stage
 * (the rate it chose) replaces *st on every rank, and rank 0's start
 * instant (its CLOCK_REALTIME + IM__MPI_STAGE_MARGIN_NS) goes into
 * so->shard, waited for as stage 0's. Both return 0, or 1 when the run
 * stops there on every rank (a rank failed, was interrupted or left);
 * without MPI, 0 and nothing happens. */
#define IM__MPI_STAGE_MARGIN_NS INT64_C(1000000000)
struct im_run_config;
struct stage_res;
struct im_stage;
int im__mpi_stage_end(const struct im_run_config *o, uint32_t stage, bool failed, struct stage_res *res);
int im__mpi_stage_begin(uint32_t stage, struct im_stage *st, struct im_run_config *so);
/* After a rank's run: takes part (as "left") in the exchanges the other
 * ranks are still in, until rank 0 says stop. */
void im__mpi_stage_drain(void);


#endif
