/* `infermeter import` (cli/import.c) and what it shares with `report`. */
#ifndef IM_CLI_IMPORT_INT_H
#define IM_CLI_IMPORT_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "analyze/validity.h"
#include "record/import.h"

/* Whether manifest is that of a run imported from a file without a
 * schedule (imported_from.not_collected names "schedule"): its client
 * self-check is NOT_JUDGED (analyze/selfcheck.h not_judged). */
bool im__import_unscheduled(const json_t *manifest);

/* For a run directory written by `infermeter import` (manifest.json has
 * "imported_from"): the audit says what the source could not give. Adds
 * the check "imported" (WARN) to v and, when the source has no schedule,
 * turns the client_check item into a WARN "not judged" and adds the reason
 * to the client self-check in audit_json ({"client_check": {...,
 * "not_collected": why}}). Nothing for other directories. 0, or -1 when
 * out of memory. */
int im__import_audit(const json_t *manifest, struct im_validity *v, json_t *audit_json);

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
