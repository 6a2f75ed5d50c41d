/* Shape and hardware constants shared by the description table (desc.c)
 * and the simulated server's profiles (profiles.c), so DeepSeek-V3's shape
 * is written once. Internal to the model module. Sources: docs/deepseek.md
 * "Presets" and docs/perf-model.md. */
#ifndef IM_MODEL_SHAPES_H
#define IM_MODEL_SHAPES_H

/* DeepSeek-V3 / R1 config.json (huggingface.co/deepseek-ai/DeepSeek-V3);
 * 671B total / 37B activated: DeepSeek-V3 Technical Report, arXiv:2412.19437. */
#define IM_DSV3_LAYERS 61
#define IM_DSV3_DENSE_LAYERS 3
#define IM_DSV3_HIDDEN 7168
#define IM_DSV3_KV_LORA_RANK 512
#define IM_DSV3_QK_ROPE_HEAD_DIM 64
#define IM_DSV3_HEADS 128
#define IM_DSV3_ROUTED_EXPERTS 256
#define IM_DSV3_TOP_K 8
#define IM_DSV3_MOE_INTERMEDIATE 2048
#define IM_DSV3_TOTAL_PARAMS 671e9
#define IM_DSV3_ACTIVE_PARAMS 37e9

/* DeepSeek-V2-Lite config.json; 15.7B / 2.4B: arXiv:2405.04434. */
#define IM_DSV2L_LAYERS 27
#define IM_DSV2L_DENSE_LAYERS 1
#define IM_DSV2L_HIDDEN 2048
#define IM_DSV2L_HEADS 16
#define IM_DSV2L_ROUTED_EXPERTS 64
#define IM_DSV2L_TOP_K 6
#define IM_DSV2L_MOE_INTERMEDIATE 1408

/* Llama-3.1-8B config.json. */
#define IM_LLAMA8B_LAYERS 32
#define IM_LLAMA8B_HEADS 32
#define IM_LLAMA8B_KV_HEADS 8
#define IM_LLAMA8B_HEAD_DIM 128
#define IM_LLAMA8B_PARAMS 8.03e9

/* NVIDIA H100 SXM and H200 datasheets (dense, i.e. without sparsity). */
#define IM_H100_HBM_BW 3.35e12
#define IM_H100_BF16 989e12
#define IM_H100_FP8 1979e12
#define IM_H100_MEM 80e9
#define IM_H200_HBM_BW 4.8e12
#define IM_H200_BF16 989e12
#define IM_H200_FP8 1979e12
#define IM_H200_MEM 141e9

#endif
