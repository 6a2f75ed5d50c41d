/* The observer (src/observe/observer.c): every sample becomes a line of
 * series.jsonl written as it is taken, and the same line is what
 * im_observer_snapshot returns; snapshots taken from another thread while
 * the observer samples never see a half-grown array (run under TSan/ASan
 * to see it). GPUs come from the fake NVML (tests/fake_nvml); the scrape
 * URL refuses connections, so its samples are scrape_error lines. */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "observe/observer.h"
#include "record/series.h"

#ifdef IM_FAKE_NVML
#define FAKE_BUILT IM_FAKE_NVML
#else
#define FAKE_BUILT NULL
#endif

struct reader {
  struct im_observer *obs;
  atomic_int stop;
  int snapshots, went_back;
  atomic_size_t last_gpu;
};

static void *read_loop(void *arg) {
  struct reader *r = arg;
  while (!r->stop) {
    struct im_series_set *s = NULL;
    if (im_observer_snapshot(r->obs, &s) != IM_OK)
      continue;
    r->snapshots++;
    if (s->n_gpu < r->last_gpu)
      r->went_back++;
    r->last_gpu = s->n_gpu;
    im_series_free(s);
    struct im_observer_latest lt; /* the live page's reader, concurrently too */
    if (im_observer_latest(r->obs, &lt) != IM_OK)
      r->went_back++;
    nanosleep(&(struct timespec){0, 2000000}, NULL);
  }
  return NULL;
}

int main(void) {
  const char *nvml = getenv("INFERMETER_NVML_PATH");
  if (!nvml || !*nvml)
    nvml = FAKE_BUILT;
  if (!nvml) {
    fprintf(stderr, "test_observer: no fake NVML built; skipped\n");
    return 0;
  }
  char path[] = "/tmp/im_test_observer_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  struct im_observer_config cfg;
  im_observer_config_default(&cfg);
  cfg.scrape_urls[cfg.n_scrape++] = "http://user:pw@127.0.0.1:1/metrics";
  cfg.interval_ns = 100000000;
  cfg.gpu = true;
  cfg.nvml_path = nvml;
  cfg.series_fd = fd;
  struct im_observer *obs = NULL;
  CHECK_EQ(im_observer_start(&obs, &cfg), IM_OK);
  struct reader r = {.obs = obs};
  pthread_t th;
  CHECK_EQ(pthread_create(&th, NULL, read_loop, &r), 0);
  /* Wait for the baseline and two interval samples as the reader sees
   * them (a condition, not a duration: a loaded sanitizer host may take
   * far longer than 3 intervals); 120 s is a hang, not a slow host. */
  for (int i = 0; i < 12000 && atomic_load(&r.last_gpu) < 3; i++)
    nanosleep(&(struct timespec){0, 10000000}, NULL);
  im_observer_stop(obs);
  r.stop = 1;
  pthread_join(th, NULL);
  CHECK(r.snapshots > 0);
  CHECK_EQ(r.went_back, 0);

  struct im_series_set *mem = NULL, *file = NULL;
  char err[256];
  CHECK_EQ(im_observer_snapshot(obs, &mem), IM_OK);
  CHECK_EQ(im_series_read(path, &file, err, sizeof err), IM_OK);
  /* The latest values: no server sample (the scrape URL refuses), none
   * made up. */
  struct im_observer_latest lt;
  CHECK_EQ(im_observer_latest(obs, &lt), IM_OK);
  CHECK_EQ(lt.n, 0);
  CHECK_EQ(im_observer_latest(NULL, &lt), IM_INVAL);
  /* Baseline, about five interval samples, the final one. */
  CHECK_INT(mem->n_gpu, >=, 3);
  CHECK_EQ(file->n_gpu, mem->n_gpu);
  CHECK_EQ(file->n_bad, 0);
  CHECK_EQ(file->lines, mem->lines);
  for (size_t i = 0; i < mem->n_gpu && i < file->n_gpu; i++) {
    CHECK_EQ(file->gpu[i].t_ns, mem->gpu[i].t_ns);
    CHECK(i == 0 || mem->gpu[i].t_ns >= mem->gpu[i - 1].t_ns);
    CHECK_EQ(file->gpu[i].n_gpus, 2);
  }
  CHECK_EQ(file->n_src, 1);
  CHECK_STR(file->src[0].url, "http://***@127.0.0.1:1/metrics");
  CHECK_EQ(file->src[0].n_pts, 0);
  /* One scrape per sample, and the settled page after the final one. */
  CHECK_EQ(file->src[0].failures, mem->n_gpu + 1);
  CHECK(file->src[0].last_error[0] != '\0');
  CHECK_STR(file->tcp_why, "not requested");
  CHECK_STR(file->gpu_why, "");
  im_series_free(mem);
  im_series_free(file);
  im_observer_free(obs);
  close(fd);
  unlink(path);
  CHECK_EQ(im_observer_snapshot(NULL, &mem), IM_INVAL);
  return CHECK_DONE();
}
