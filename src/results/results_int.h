/* Internals of results/: the pieces results.c composes. Names carry the
 * im__results_ prefix. */
#ifndef IM_RESULTS_RESULTS_INT_H
#define IM_RESULTS_RESULTS_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "analyze/moe.h"
#include "analyze/validity.h"

/* moe_scrapes.c: feeds s (initialised here) the pages of DIR/scrapes.prom
 * taken at CLOCK_MONOTONIC times in [from_mono, to_mono] with status 200.
 * A missing file leaves s empty (0). 0, or -1 when out of memory. */
int im__results_moe_scrapes(const char *dir, int64_t from_mono, int64_t to_mono,
                            struct im_moe_scrape *s);

/* import_audit.c (docs/import.md). Whether manifest is that of a run
 * imported from a file without a schedule (imported_from.not_collected
 * names "schedule"): its client self-check is NOT_JUDGED. */
bool im__results_import_unscheduled(const json_t *manifest);
/* For a run directory written by `infermeter import` (manifest.json has
 * "imported_from"): the audit says what the source could not give. Adds
 * the check "imported" (WARN) to v and, when the source has no schedule,
 * turns the client_check item into a WARN "not judged" and adds the reason
 * to the client self-check in audit_json ({"client_check": {...,
 * "not_collected": why}}). Nothing for other directories. 0, or -1 when
 * out of memory. */
int im__results_import_audit(const json_t *manifest, struct im_validity *v, json_t *audit_json);

/* shards.c: a merged run's manifest (docs/distributed.md). Whether a
 * shard's own client self-check was INVALID (each named on text when not
 * NULL). */
bool im__results_shards_invalid(const json_t *manifest, FILE *text);
/* Its clock alignment check (analyze/clocksync.h) from the manifest's
 * shards, against the mean ITL in ms; false when the manifest is not a
 * merged run's. */
bool im__results_clock_check(const json_t *manifest, double itl_mean_ms,
                             struct im_valid_check *c);

#endif
