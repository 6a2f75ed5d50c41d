/* The CLI's MoE pieces (docs/deepseek.md): metrics.moe of a stage from the
 * run directory's scrapes.prom, and `infermeter analyze-routing`. */
#ifndef IM_CLI_MOE_INT_H
#define IM_CLI_MOE_INT_H

#include <stdint.h>

#include "analyze/moe.h"

/* Feeds s (initialised here) the pages of DIR/scrapes.prom taken at
 * CLOCK_MONOTONIC times in [from_mono, to_mono] with status 200. A missing
 * file leaves s empty (0). 0, or -1 when out of memory. */
int im__report_moe_scrapes(const char *dir, int64_t from_mono, int64_t to_mono,
                           struct im_moe_scrape *s);

#endif
