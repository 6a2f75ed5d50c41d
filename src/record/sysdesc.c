/* Model/hardware descriptions from files, flags and the target (contract
 * in sysdesc.h). The table itself is model/desc.c; this file only reads
 * JSON, which the model module may not. */
#include "record/sysdesc.h"
#include "record/json_get.h"

#include <sys/stat.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

/* A model-config file is a few KiB; refuse anything absurd. */
#define MAX_CONFIG_BYTES (4u << 20)

static uint32_t u32(const json_t *o, const char *key, uint32_t dflt) {
  double v = im_json_num_of(o, key, (double)dflt);
  return v >= 0 && v <= 1e9 ? (uint32_t)v : dflt;
}

/* infermeter's own format (also the manifest's "system.model"). */
static void parse_own(const json_t *o, struct im_model_desc *m) {
  memset(m, 0, sizeof *m);
  const char *name = json_string_value(json_object_get(o, "name"));
  snprintf(m->name, sizeof m->name, "%s", name ? name : "custom");
  const char *attn = json_string_value(json_object_get(o, "attention"));
  m->attn = attn && !strcmp(attn, "MLA") ? IM_ATTN_MLA : IM_ATTN_GQA;
  m->layers = u32(o, "layers", 0);
  m->dense_layers = u32(o, "dense_layers", 0);
  m->hidden = u32(o, "hidden_size", 0);
  m->kv_lora_rank = u32(o, "kv_lora_rank", 0);
  m->qk_rope_head_dim = u32(o, "qk_rope_head_dim", 0);
  m->heads = u32(o, "heads", 0);
  m->kv_heads = u32(o, "kv_heads", m->heads);
  m->head_dim = u32(o, "head_dim", m->heads ? m->hidden / m->heads : 0);
  m->routed_experts = u32(o, "routed_experts", 0);
  m->shared_experts = u32(o, "shared_experts", 0);
  m->top_k = u32(o, "top_k", 0);
  m->expert_intermediate = u32(o, "expert_intermediate_size", 0);
  m->weight_bytes = im_json_num_of(o, "weight_bytes", 2.0);
  m->kv_bytes = im_json_num_of(o, "kv_bytes", 2.0);
  m->total_params = im_json_num_of(o, "total_params", 0);
  m->active_params = im_json_num_of(o, "active_params", m->total_params);
  if (!m->routed_experts && !json_object_get(o, "dense_layers"))
    m->dense_layers = m->layers;
}

static json_t *own_json(const struct im_model_desc *m) {
  return json_pack("{s:s, s:I, s:I, s:I, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, "
                   "s:f, s:f, s:f}",
                   "name", m->name, "layers", (json_int_t)m->layers, "dense_layers",
                   (json_int_t)m->dense_layers, "hidden_size", (json_int_t)m->hidden,
                   "attention", m->attn == IM_ATTN_MLA ? "MLA" : "GQA", "kv_lora_rank",
                   (json_int_t)m->kv_lora_rank, "qk_rope_head_dim",
                   (json_int_t)m->qk_rope_head_dim, "heads", (json_int_t)m->heads, "kv_heads",
                   (json_int_t)m->kv_heads, "head_dim", (json_int_t)m->head_dim,
                   "routed_experts", (json_int_t)m->routed_experts, "shared_experts",
                   (json_int_t)m->shared_experts, "top_k", (json_int_t)m->top_k,
                   "expert_intermediate_size", (json_int_t)m->expert_intermediate,
                   "weight_bytes", m->weight_bytes, "kv_bytes", m->kv_bytes, "total_params",
                   m->total_params, "active_params", m->active_params);
}

static double dtype_bytes(const json_t *cfg) {
  const json_t *q = json_object_get(cfg, "quantization_config");
  const char *qm = json_string_value(json_object_get(q, "quant_method"));
  if (qm && !strcmp(qm, "fp8"))
    return 1.0;
  const char *dt = json_string_value(json_object_get(cfg, "torch_dtype"));
  return dt && !strcmp(dt, "float32") ? 4.0 : 2.0;
}

/* A Hugging Face config.json (DeepSeek-V2/V3 field names, Llama/Qwen/
 * Mixtral ones for dense and GQA models). Parameter counts, which
 * config.json does not carry, are estimated from the shapes: embeddings
 * (and an untied head), attention, dense FFNs, routed + shared experts and
 * the router; active = total - unused routed experts. */
static void parse_hf(const json_t *c, struct im_model_desc *m) {
  memset(m, 0, sizeof *m);
  const char *arch = json_string_value(json_array_get(json_object_get(c, "architectures"), 0));
  snprintf(m->name, sizeof m->name, "%s", arch ? arch : "config.json");
  double L = im_json_num_of(c, "num_hidden_layers", 0), H = im_json_num_of(c, "hidden_size", 0);
  double heads = im_json_num_of(c, "num_attention_heads", 0);
  double kvh = im_json_num_of(c, "num_key_value_heads", heads);
  double hd = im_json_num_of(c, "head_dim", heads > 0 ? H / heads : 0);
  double routed = im_json_num_of(c, "n_routed_experts",
                      im_json_num_of(c, "num_local_experts", im_json_num_of(c, "num_experts", 0)));
  double topk = im_json_num_of(c, "num_experts_per_tok", 0);
  double shared = im_json_num_of(c, "n_shared_experts", 0);
  double moe_i = im_json_num_of(c, "moe_intermediate_size", routed > 0 ? im_json_num_of(c, "intermediate_size", 0) : 0);
  double dense_i = im_json_num_of(c, "intermediate_size", 0);
  double dense_l = routed > 0 ? im_json_num_of(c, "first_k_dense_replace", 0) : L;
  double vocab = im_json_num_of(c, "vocab_size", 0);
  m->layers = (uint32_t)L;
  m->dense_layers = (uint32_t)dense_l;
  m->hidden = (uint32_t)H;
  m->heads = (uint32_t)heads;
  m->kv_heads = (uint32_t)kvh;
  m->head_dim = (uint32_t)hd;
  m->routed_experts = (uint32_t)routed;
  m->shared_experts = (uint32_t)shared;
  m->top_k = (uint32_t)topk;
  m->expert_intermediate = (uint32_t)moe_i;
  m->weight_bytes = dtype_bytes(c);
  m->kv_bytes = 2.0;
  double attn;
  if (json_is_number(json_object_get(c, "kv_lora_rank"))) {
    m->attn = IM_ATTN_MLA;
    double kvr = im_json_num_of(c, "kv_lora_rank", 0), rope = im_json_num_of(c, "qk_rope_head_dim", 0);
    double nope = im_json_num_of(c, "qk_nope_head_dim", 0), vd = im_json_num_of(c, "v_head_dim", 0);
    double qr = im_json_num_of(c, "q_lora_rank", 0);
    m->kv_lora_rank = (uint32_t)kvr;
    m->qk_rope_head_dim = (uint32_t)rope;
    double q = qr > 0 ? H * qr + qr + qr * heads * (nope + rope) : H * heads * (nope + rope);
    attn = q + H * (kvr + rope) + kvr + kvr * heads * (nope + vd) + heads * vd * H;
  } else {
    m->attn = IM_ATTN_GQA;
    attn = 2.0 * H * heads * hd + 2.0 * H * kvh * hd;
  }
  double expert = 3.0 * H * moe_i, moe_l = L - dense_l;
  bool tied = json_is_true(json_object_get(c, "tie_word_embeddings"));
  double total = vocab * H * (tied ? 1.0 : 2.0) + L * attn + dense_l * 3.0 * H * dense_i +
                 (routed > 0 ? moe_l * ((routed + shared) * expert + H * routed) : 0.0);
  m->total_params = im_json_num_of(c, "total_params", total);
  m->active_params = im_json_num_of(c, "active_params",
                         routed > 0 ? total - moe_l * (routed - topk) * expert : total);
}

int im_sysdesc_model_load(const char *arg, struct im_model_desc *out, char *src, size_t srclen,
                       char *err, size_t errlen) {
  const struct im_model_desc *p = im_model_preset(arg);
  if (p) {
    *out = *p;
    snprintf(src, srclen, "preset %s (--model-config)", p->name);
    return 0;
  }
  struct stat st;
  if (stat(arg, &st) == 0 && st.st_size > (off_t)MAX_CONFIG_BYTES) {
    snprintf(err, errlen, "--model-config %s: larger than %u bytes, not a model config", arg,
             MAX_CONFIG_BYTES);
    return -1;
  }
  json_error_t je;
  json_t *root = json_load_file(arg, JSON_REJECT_DUPLICATES, &je);
  if (!root) {
    snprintf(err, errlen,
             "--model-config %s: neither a preset (see `infermeter run --help`) nor a JSON file "
             "(%s, line %d)", arg, je.text, je.line);
    return -1;
  }
  int rc = -1;
  if (!json_is_object(root)) {
    snprintf(err, errlen, "--model-config %s: not a JSON object", arg);
    goto out;
  }
  bool hf = json_object_get(root, "num_hidden_layers") != NULL;
  if (hf)
    parse_hf(root, out);
  else
    parse_own(root, out);
  char why[128];
  if (!im_model_desc_valid(out, why, sizeof why)) {
    snprintf(err, errlen, "--model-config %s: %s (%s format; docs/deepseek.md)", arg, why,
             hf ? "Hugging Face config.json" : "infermeter");
    goto out;
  }
  snprintf(src, srclen, "%s %s (--model-config)", hf ? "Hugging Face config.json" : "file", arg);
  rc = 0;
out:
  json_decref(root);
  return rc;
}

/* What the target declared in /version: the built-in server's
 * "system":{"model_preset", "hardware", "gpus"} and "config":{"tp","dp"}. */
static void from_target(const json_t *version, struct im_sysdesc *s) {
  const json_t *sys = json_object_get(version, "system");
  const json_t *cfg = json_object_get(version, "config");
  const struct im_model_desc *m =
      im_model_preset(json_string_value(json_object_get(sys, "model_preset")));
  if (m) {
    s->model = *m;
    s->has_model = true;
    snprintf(s->model_src, sizeof s->model_src, "preset %s (declared by the target's /version)",
             m->name);
  }
  const struct im_hw_desc *h = im_hw_preset(json_string_value(json_object_get(sys, "hardware")));
  if (h) {
    s->hw = *h;
    s->has_hw = true;
    snprintf(s->hw_src, sizeof s->hw_src, "preset %s (declared by the target's /version)", h->name);
  }
  const char *decl = "declared by the target's /version";
  uint32_t g = u32(sys, "gpus", 0), tp = u32(cfg, "tp", 0), dp = u32(cfg, "dp", 0);
  if (g) {
    s->gpus = g;
    snprintf(s->gpus_src, sizeof s->gpus_src, "%s", decl);
  }
  if (tp) {
    s->tp = tp;
    snprintf(s->tp_src, sizeof s->tp_src, "%s", decl);
  }
  if (dp) {
    s->dp = dp;
    snprintf(s->dp_src, sizeof s->dp_src, "%s", decl);
  }
}

static void set_u32(uint32_t v, const char *flag, uint32_t *dst, char *src, size_t srclen) {
  if (v) {
    *dst = v;
    snprintf(src, srclen, "%s", flag);
  }
}

int im_sysdesc_resolve(const struct im_sys_flags *fl, const struct json_t *version,
                    struct im_sysdesc *s, char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  /* Practitioners' DeepSeek load-testing reference (docs/metrics.md §9). */
  s->mfu_ref = fl->mfu_ref > 0 ? fl->mfu_ref : 0.32;
  if (version)
    from_target(version, s);
  if (fl->model_config) {
    if (im_sysdesc_model_load(fl->model_config, &s->model, s->model_src, sizeof s->model_src, err,
                           errlen))
      return -1;
    s->has_model = true;
  }
  if (fl->hardware) {
    const struct im_hw_desc *h = im_hw_preset(fl->hardware);
    if (!h) {
      snprintf(err, errlen,
               "--hardware %s: unknown (A100-SXM, H100-SXM, H200, B200, MI300X)", fl->hardware);
      return -1;
    }
    s->hw = *h;
    s->has_hw = true;
    snprintf(s->hw_src, sizeof s->hw_src, "preset %s (--hardware)", h->name);
  }
  set_u32(fl->gpus, "--gpus", &s->gpus, s->gpus_src, sizeof s->gpus_src);
  set_u32(fl->tp, "--tp", &s->tp, s->tp_src, sizeof s->tp_src);
  set_u32(fl->dp, "--dp", &s->dp, s->dp_src, sizeof s->dp_src);
  /* Defaults: one replica of TP over every GPU, one GPU when nothing says. */
  if (!s->gpus && (s->has_model || s->has_hw)) {
    s->gpus = s->tp ? s->tp : 1;
    snprintf(s->gpus_src, sizeof s->gpus_src, "default (%s)", s->tp ? "= tp" : "1");
  }
  if (!s->tp && s->gpus) {
    s->tp = s->gpus;
    snprintf(s->tp_src, sizeof s->tp_src, "default (= gpus)");
  }
  if (!s->dp && s->gpus) {
    s->dp = 1;
    snprintf(s->dp_src, sizeof s->dp_src, "default (1)");
  }
  if (s->gpus && s->tp > s->gpus) {
    snprintf(err, errlen, "--tp %u exceeds --gpus %u", s->tp, s->gpus);
    return -1;
  }
  if (fl->kv_bytes_per_token > 0) {
    s->kv_bytes_per_token_per_gpu = fl->kv_bytes_per_token;
    snprintf(s->kv_src, sizeof s->kv_src, "--kv-bytes-per-token");
  } else if (s->has_model) {
    s->kv_bytes_per_token_per_gpu = im_model_kv_bytes_per_token_per_gpu(&s->model, s->tp, s->dp);
    snprintf(s->kv_src, sizeof s->kv_src, "model description (%.150s)", s->model_src);
  }
  if (fl->gpu_memory > 0) {
    s->gpu_memory_bytes = fl->gpu_memory;
    snprintf(s->mem_src, sizeof s->mem_src, "--gpu-memory");
  } else if (s->has_hw) {
    s->gpu_memory_bytes = s->hw.mem_bytes;
    snprintf(s->mem_src, sizeof s->mem_src, "hardware description (%.150s)", s->hw_src);
  }
  return 0;
}

static json_t *valsrc(double v, const char *src) {
  return v > 0 ? json_pack("{s:f, s:s}", "value", v, "source", src) : json_null();
}

static json_t *countsrc(uint32_t v, const char *src) {
  return v ? json_pack("{s:I, s:s}", "value", (json_int_t)v, "source", src) : json_null();
}

json_t *im_sysdesc_json(const struct im_sysdesc *s) {
  json_t *o = json_object();
  if (!o)
    return NULL;
  if (s->has_model) {
    json_t *m = own_json(&s->model);
    if (m)
      json_object_set_new(m, "source", json_string(s->model_src));
    json_object_set_new(o, "model", m ? m : json_null());
  } else {
    json_object_set_new(o, "model", json_null());
  }
  if (s->has_hw)
    json_object_set_new(o, "hardware",
                        json_pack("{s:s, s:f, s:f, s:f, s:f, s:s}", "name", s->hw.name,
                                  "hbm_bandwidth_bytes_per_s", s->hw.hbm_bw, "bf16_flops",
                                  s->hw.flops_bf16, "fp8_flops", s->hw.flops_fp8, "memory_bytes",
                                  s->hw.mem_bytes, "source", s->hw_src));
  else
    json_object_set_new(o, "hardware", json_null());
  json_object_set_new(o, "gpus", countsrc(s->gpus, s->gpus_src));
  json_object_set_new(o, "tp", countsrc(s->tp, s->tp_src));
  json_object_set_new(o, "dp", countsrc(s->dp, s->dp_src));
  json_object_set_new(o, "kv_bytes_per_token_per_gpu",
                      valsrc(s->kv_bytes_per_token_per_gpu, s->kv_src));
  json_object_set_new(o, "gpu_memory_bytes", valsrc(s->gpu_memory_bytes, s->mem_src));
  json_object_set_new(o, "mfu_ref", json_real(s->mfu_ref));
  return o;
}

static double read_valsrc(const json_t *o, const char *key, char *src, size_t srclen) {
  const json_t *v = json_object_get(o, key);
  const char *s = json_string_value(json_object_get(v, "source"));
  snprintf(src, srclen, "%s", s ? s : "");
  return im_json_num_of(v, "value", 0);
}

void im_sysdesc_from_json(const json_t *j, struct im_sysdesc *s) {
  memset(s, 0, sizeof *s);
  const json_t *m = json_object_get(j, "model");
  if (json_is_object(m)) {
    parse_own(m, &s->model);
    const char *src = json_string_value(json_object_get(m, "source"));
    snprintf(s->model_src, sizeof s->model_src, "%s", src ? src : "");
    s->has_model = im_model_desc_valid(&s->model, NULL, 0);
  }
  const json_t *h = json_object_get(j, "hardware");
  if (json_is_object(h)) {
    const char *name = json_string_value(json_object_get(h, "name"));
    const char *src = json_string_value(json_object_get(h, "source"));
    snprintf(s->hw.name, sizeof s->hw.name, "%s", name ? name : "custom");
    snprintf(s->hw_src, sizeof s->hw_src, "%s", src ? src : "");
    s->hw.hbm_bw = im_json_num_of(h, "hbm_bandwidth_bytes_per_s", 0);
    s->hw.flops_bf16 = im_json_num_of(h, "bf16_flops", 0);
    s->hw.flops_fp8 = im_json_num_of(h, "fp8_flops", 0);
    s->hw.mem_bytes = im_json_num_of(h, "memory_bytes", 0);
    s->has_hw = im_hw_desc_valid(&s->hw, NULL, 0);
  }
  s->gpus = (uint32_t)read_valsrc(j, "gpus", s->gpus_src, sizeof s->gpus_src);
  s->tp = (uint32_t)read_valsrc(j, "tp", s->tp_src, sizeof s->tp_src);
  s->dp = (uint32_t)read_valsrc(j, "dp", s->dp_src, sizeof s->dp_src);
  s->kv_bytes_per_token_per_gpu =
      read_valsrc(j, "kv_bytes_per_token_per_gpu", s->kv_src, sizeof s->kv_src);
  s->gpu_memory_bytes = read_valsrc(j, "gpu_memory_bytes", s->mem_src, sizeof s->mem_src);
  s->mfu_ref = im_json_num_of(j, "mfu_ref", 0.32);
}
