/* `infermeter import` (cli/import.c) and what it shares with `report`. */
#ifndef IM_CLI_IMPORT_INT_H
#define IM_CLI_IMPORT_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "analyze/validity.h"
#include "record/import.h"

/* Prints the effective request rate of an imported trace and its class
 * table (user requests, retries, health checks, errors) from DIR's
 * results.json. 0, or -1 (said). */
int im__otlp_summary(const char *dir, FILE *text);

/* Writes the user requests of im (kind measured, first attempts) as an
 * Azure LLM inference trace (TIMESTAMP in seconds from the first,
 * ContextTokens, GeneratedTokens; docs/datasets.md), with in_len / out_len
 * where a span carries no token counts. 0, or -1 (said). */
int im__write_user_trace(const struct im_import *im, const char *path, uint32_t in_len,
                         uint32_t out_len, FILE *text);

#endif
