/* The system a run measures: model description, GPU, parallelism, and
 * where each came from (docs/deepseek.md "Model and hardware").
 *
 * Precedence, per value: an explicit flag (--kv-bytes-per-token,
 * --gpu-memory, --gpus/--tp/--dp) overrides the description given by
 * --model-config / --hardware, which overrides what the target declared in
 * its /version answer (the built-in server declares its profile's table
 * entries). The resolved system is written into manifest.json as "system"
 * and read back from it by `report`, so results.json's roofline is
 * recomputed from the run directory alone. */
#ifndef IM_RECORD_SYSDESC_H
#define IM_RECORD_SYSDESC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/desc.h"

struct json_t;

#define IM_SYS_SRC_LEN 200

struct im_sysdesc {
  bool has_model, has_hw;
  struct im_model_desc model;
  struct im_hw_desc hw;
  char model_src[IM_SYS_SRC_LEN], hw_src[IM_SYS_SRC_LEN];
  uint32_t gpus, tp, dp;             /* 0: unknown */
  char gpus_src[IM_SYS_SRC_LEN], tp_src[IM_SYS_SRC_LEN], dp_src[IM_SYS_SRC_LEN];
  double kv_bytes_per_token_per_gpu; /* 0: unknown */
  char kv_src[IM_SYS_SRC_LEN];
  double gpu_memory_bytes;           /* per GPU; 0: unknown */
  char mem_src[IM_SYS_SRC_LEN];
  double mfu_ref;                    /* MFU reference line (0.32) */
};

/* What the user gave on the command line (NULL / 0: not given). */
struct im_sys_flags {
  const char *model_config;   /* --model-config FILE|PRESET */
  const char *hardware;       /* --hardware NAME */
  uint32_t gpus, tp, dp;
  double kv_bytes_per_token;  /* --kv-bytes-per-token */
  double gpu_memory;          /* --gpu-memory */
  double mfu_ref;             /* --mfu-ref (0: 0.32) */
};

/* Reads a model description: a preset name (model/desc.h), a JSON file in
 * infermeter's format (keys as docs/deepseek.md), or a Hugging Face
 * config.json (num_hidden_layers, first_k_dense_replace, kv_lora_rank, ...;
 * parameter counts estimated from the shapes when absent). 0, or -1 with
 * the reason (naming the file and field) in err. src receives a one-line
 * description of where it came from. */
int im_sysdesc_model_load(const char *arg, struct im_model_desc *out, char *src, size_t srclen,
                       char *err, size_t errlen);

/* Resolves the system from the flags and the target's /version answer
 * (NULL when none). 0, or -1 with the reason in err (unknown preset,
 * unreadable file, bad field). */
int im_sysdesc_resolve(const struct im_sys_flags *fl, const struct json_t *version,
                    struct im_sysdesc *out, char *err, size_t errlen);

/* The manifest's "system" object; NULL when out of memory. */
struct json_t *im_sysdesc_json(const struct im_sysdesc *s);
/* Reads it back (manifest.json's "system"; NULL or absent: nothing known).
 * Fields that do not validate are dropped (has_model / has_hw false). */
void im_sysdesc_from_json(const struct json_t *j, struct im_sysdesc *out);

#endif
