/*
 * pulpie_rt_internal.h — the core's internal entry points: the Python package's, not the C
 * SDK's. The C library (`make capi`) is built without them (cargo feature python-ffi off) and
 * exports only pulpie_rt.h; the Python package's build (`_core_rs*.so`) exports both.
 *
 * This header and pulpie_rt.h are the one declaration of the core's ABI: the Python binding
 * (runtime/binding.py) declares its ctypes functions, structs and constants from their text,
 * which the library carries (pulpie_rt_py_header), and the core's Rust constants are generated
 * from their #defines (core/build.rs). tests/test_binding.py checks every struct's size and
 * field offsets here against the compiled library's (pulpie_rt_py_layouts), and that every
 * function the library exports is declared.
 *
 * The binding reads a small C: `typedef struct NAME NAME;` (an opaque handle),
 * `typedef struct { fields } NAME;`, function declarations, and `#define PULPIE_RT_* <integer>`
 * (an integer with a `u` suffix is unsigned for the Rust side). Byte buffers that come with a
 * length are `uint8_t *` (they may hold NUL bytes); `const char *` is a NUL-terminated string.
 *
 * Calls here return PULPIE_RT_DONE, or PULPIE_RT_FAILED (the input cannot be processed: the
 * message or reason says why), PULPIE_RT_PANIC (a fault inside the core, caught), or, for
 * pulpie_rt_markdown alone, PULPIE_RT_SPEC_RAISES. Messages (pulpie_rt_message) and buffers
 * are released with pulpie_rt_free; arrays of uint64_t with pulpie_rt_ort_free_u64s.
 *
 * Options structs start with struct_size = sizeof(the struct); the core refuses another size
 * (a binding and a library of two builds), naming both.
 */
#ifndef PULPIE_RT_INTERNAL_H
#define PULPIE_RT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "pulpie_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes of the internal calls. */
#define PULPIE_RT_DONE 0
#define PULPIE_RT_FAILED 1
#define PULPIE_RT_PANIC 2
#define PULPIE_RT_SPEC_RAISES 4 /* the Markdown specification raises for this input: reason
                                   "<ExceptionType>: <message>" */

/* Segmentation flags (pulpie_rt_simplify_page_flags' flags, pulpie_rt_prepare_options'
 * segmentation). */
#define PULPIE_RT_SIMPLIFY_KEEP_HIDDEN 1u   /* keep the elements the reference removes as
                                               hidden */
#define PULPIE_RT_SIMPLIFY_DROP_NOSCRIPT 2u /* drop the noscript elements that hold no block */
#define PULPIE_RT_SIMPLIFY_VIA_SERIALIZATION 4u /* read the tree through lexbor's serialization,
                                                   never off lexbor's tree (same outputs; for
                                                   tests and benchmarks, not segmentation) */

/* pulpie_rt_block_features' flags: the columns after features::FEATURE_NAMES. */
#define PULPIE_RT_FEATURES_LIBXML2_TREE 1u /* libxml2's tree as it is, not as the DOM sees it */
#define PULPIE_RT_FEATURES_EXTRAS 2u       /* the extras (layout blocks-v2) */
#define PULPIE_RT_FEATURES_CONTAINERS 4u   /* and the containers (blocks-v3) */
#define PULPIE_RT_FEATURES_DIALOGS 8u      /* and the dialog columns (blocks-v4) */
#define PULPIE_RT_FEATURES_RAILS 16u       /* and the rail columns (blocks-v5) */
#define PULPIE_RT_FEATURES_TEASERS 32u     /* and the teaser columns (blocks-v6) */

/* pulpie_rt_prepare_options' features: the layout of the block features prepared. */
#define PULPIE_RT_LAYOUT_NONE 0u
#define PULPIE_RT_LAYOUT_BLOCKS_V1 1u
#define PULPIE_RT_LAYOUT_BLOCKS_V2 2u
#define PULPIE_RT_LAYOUT_BLOCKS_V3 3u
#define PULPIE_RT_LAYOUT_BLOCKS_V4 4u
#define PULPIE_RT_LAYOUT_BLOCKS_V5 5u
#define PULPIE_RT_LAYOUT_BLOCKS_V6 6u

/* The attributes an element keeps when a page is parsed: its start tag's first this many
 * (lexbor's tree builder checks each new attribute against every one the element holds, so
 * n attributes cost n * n / 2 comparisons). The dev pages' most is 71. */
#define PULPIE_RT_MAX_ATTRIBUTES 1024u

/* pulpie_rt_simplify_step's steps. */
#define PULPIE_RT_STEP_LEXBOR_HTML 0u          /* selectolax's LexborHTMLParser(data).html */
#define PULPIE_RT_STEP_LEXBOR_SERIALIZATION 1u /* the raw page's rewrites, lexbor, no <?xml */
#define PULPIE_RT_STEP_TREE 2u                 /* libxml2's tree of a serialization, written */
#define PULPIE_RT_STEP_TREE_SOURCE 3u          /* how simplify has that tree of a page: "walk"
                                                  (off lexbor's tree) or "serialization" */
#define PULPIE_RT_STEP_FEATURES_TREE 4u        /* how the block features read map_html's tree:
                                                  "same" (off simplify's own tree, bitwise the
                                                  values of map_html read back), "map_html"
                                                  (read back), or where they differ */
#define PULPIE_RT_STEP_RECONSTRUCT_TREE 5u     /* how reconstruct reads map_html's tree:
                                                  "same" (off simplify's own tree: libxml2's
                                                  nodes of map_html, the same main HTML),
                                                  "map_html" (parsed), or where they differ */

/* pulpie_rt_sep_outputs' kind. */
#define PULPIE_RT_OUTPUTS_LOGITS 0u  /* `labels` logits per SEP */
#define PULPIE_RT_OUTPUTS_MARGINS 1u /* one margin per SEP */

/* pulpie_rt_finish_output's empty_reason: why the Markdown is empty. */
#define PULPIE_RT_EMPTY_NONE 0u
#define PULPIE_RT_EMPTY_NO_TEXT 1u
#define PULPIE_RT_EMPTY_NO_MAIN 2u
#define PULPIE_RT_EMPTY_MAIN_WITHOUT_TEXT 3u

/* pulpie_rt_prune's drop: what to take out of main-content HTML (bits). */
#define PULPIE_RT_DROP_LINKS 1u  /* each <a>'s tags (its text stays) */
#define PULPIE_RT_DROP_IMAGES 2u /* <img>, and <picture> with its content */
#define PULPIE_RT_DROP_TABLES 4u /* <table> with its content */

/* An absent block id (id_lens) and an absent span (pulpie_rt_extract_blocks). */
#define PULPIE_RT_NO_ID 18446744073709551615ull

typedef struct pulpie_rt_tokenizer pulpie_rt_tokenizer;
typedef struct pulpie_rt_ort pulpie_rt_ort; /* a loaded ONNX Runtime, shared */
typedef struct pulpie_rt_classifier pulpie_rt_classifier;
typedef struct pulpie_rt_rescorer pulpie_rt_rescorer;
typedef struct pulpie_rt_context_rescorer pulpie_rt_context_rescorer;
typedef struct pulpie_rt_trees pulpie_rt_trees;

/* The binding's own: this header and pulpie_rt.h as the library was built with them, and the
 * library's layout of every struct they declare ("name size\n" then " field offset size\n"
 * per field). Static. */
const char *pulpie_rt_py_header(void);
const char *pulpie_rt_py_layouts(void);

/* A message (UTF-8, not NUL-terminated), released with pulpie_rt_free. */
typedef struct {
    uint8_t *ptr;
    size_t len;
} pulpie_rt_message;

/* ---- The stages one by one (core/src/lib.rs) ------------------------------------------- */

typedef struct {
    uint8_t *simplified_ptr;
    size_t simplified_len;
    uint8_t *map_ptr;
    size_t map_len;
    const char *reason; /* static, for PULPIE_RT_FAILED / PULPIE_RT_PANIC */
} pulpie_rt_simplify_output;

typedef struct {
    uint8_t *ptr;
    size_t len;
    const char *reason;
} pulpie_rt_text_output;

typedef struct {
    uint8_t *text_ptr;
    size_t text_len;
    const char *encoding; /* static: the Encoding Standard's name */
    const char *source;   /* static: what said it (bom, content-type, meta, detector, default) */
    const char *reason;
} pulpie_rt_decode_output;

typedef struct {
    pulpie_rt_tokenizer *handle;
    uint8_t *error_ptr;
    size_t error_len;
} pulpie_rt_tokenizer_load_output;

typedef struct {
    uint32_t *ptr; /* each text's end, then all ids; released with pulpie_rt_free_u32 */
    size_t len;
    const char *reason;
} pulpie_rt_token_ids_output;

typedef struct {
    uint8_t *ptr; /* rows x cols float32 */
    size_t len;
    size_t rows;
    size_t cols;
    const char *reason;
} pulpie_rt_features_output;

/* simplify.simplify(page, cutoff) of a page (UTF-8; a lone surrogate as surrogatepass writes
 * it). */
int32_t pulpie_rt_simplify_page(const uint8_t *page, size_t len, size_t cutoff,
                                pulpie_rt_simplify_output *out);
int32_t pulpie_rt_simplify_page_flags(const uint8_t *page, size_t len, size_t cutoff,
                                      uint32_t flags, pulpie_rt_simplify_output *out);
int32_t pulpie_rt_simplify_step(const uint8_t *data, size_t len, uint32_t step,
                                pulpie_rt_text_output *out);
/* Page bytes to text, as every door decodes them (content_type NULL: no header). */
int32_t pulpie_rt_decode(const uint8_t *data, size_t len, const uint8_t *content_type,
                         size_t content_type_len, pulpie_rt_decode_output *out);
void pulpie_rt_free(uint8_t *ptr, size_t len);
/* The UTF-8 of count code points of width bytes each (1, 2 or 4: Latin-1, UCS-2, UCS-4, as
 * CPython stores a str), aligned to width; PULPIE_RT_FAILED for a surrogate code point. */
int32_t pulpie_rt_utf8_of_code_points(const uint8_t *points, size_t count, uint32_t width,
                                      pulpie_rt_text_output *out);
/* reconstruct.extract_main_html: main_ids each followed by a NUL. */
int32_t pulpie_rt_reconstruct(const uint8_t *map_html, size_t map_len, const uint8_t *main_ids,
                              size_t ids_len, pulpie_rt_text_output *out);
/* pulpie_rt_reconstruct of the map_html held as count code points of width bytes each (as
 * pulpie_rt_utf8_of_code_points takes them), encoded by the core and not validated again;
 * PULPIE_RT_FAILED where they cannot be encoded (a surrogate). */
int32_t pulpie_rt_reconstruct_code_points(const uint8_t *points, size_t count, uint32_t width,
                                          const uint8_t *main_ids, size_t ids_len,
                                          pulpie_rt_text_output *out);

/* The byte-level BPE tokenizer: from tokenizer.json's bytes (json) or its path;
 * ensure_specials: special tokens to add, one a line. */
int32_t pulpie_rt_tokenizer_load(const uint8_t *json, size_t json_len, const uint8_t *path,
                                 size_t path_len, const uint8_t *ensure_specials,
                                 size_t specials_len, pulpie_rt_tokenizer_load_output *out);
void pulpie_rt_tokenizer_free(pulpie_rt_tokenizer *handle);
int64_t pulpie_rt_tokenizer_token_to_id(const pulpie_rt_tokenizer *handle, const uint8_t *token,
                                        size_t len); /* -1: no such token */
uint64_t pulpie_rt_tokenizer_vocab_size(const pulpie_rt_tokenizer *handle,
                                        uint8_t with_added_tokens);
int32_t pulpie_rt_tokenizer_encode(const pulpie_rt_tokenizer *handle, const uint8_t *texts,
                                   size_t texts_len, const uint64_t *text_ends, size_t n_texts,
                                   pulpie_rt_token_ids_output *out);
void pulpie_rt_free_u32(uint32_t *ptr, size_t len);

/* Markdown / plain text of HTML (html2text ported). */
int32_t pulpie_rt_markdown(const uint8_t *input, size_t len, pulpie_rt_text_output *out);
int32_t pulpie_rt_text(const uint8_t *input, size_t len, pulpie_rt_text_output *out);
/* Main-content HTML without what drop (PULPIE_RT_DROP_* bits) names (core/src/prune.rs). */
int32_t pulpie_rt_prune(const uint8_t *input, size_t len, uint32_t drop,
                        pulpie_rt_text_output *out);

/* A JSONL line's string member name (UTF-8) as a page's text, written at the start of text
 * (text_cap bytes, at least len: one buffer for every line) with its length in *text_len, and
 * the byte span of its string token, quotes included (span[0], span[1]): PULPIE_RT_DONE, or
 * PULPIE_RT_FAILED (no reason) where the line is to be read otherwise (not one JSON object, the
 * member missing, repeated or not a string, a lone surrogate escape) or text_cap is below len,
 * PULPIE_RT_PANIC on a bug (read it otherwise too). */
int32_t pulpie_rt_json_string_member(const uint8_t *line, size_t len, const uint8_t *name,
                                     size_t name_len, size_t *span, uint8_t *text,
                                     size_t text_cap, size_t *text_len);

/* The block features of map_html's ids (joined in ids, id_lens[i] bytes each, PULPIE_RT_NO_ID
 * for an absent one); flags PULPIE_RT_FEATURES_*. */
int32_t pulpie_rt_block_features(const uint8_t *map_html, size_t map_len, const uint8_t *ids,
                                 size_t ids_len, const size_t *id_lens, size_t n_ids,
                                 uint32_t flags, pulpie_rt_features_output *out);
/* One byte per id: 1 when its block exists only with PULPIE_RT_SIMPLIFY_KEEP_HIDDEN. */
int32_t pulpie_rt_hidden_blocks(const uint8_t *map_html, size_t map_len, const uint8_t *ids,
                                size_t ids_len, const size_t *id_lens, size_t n_ids,
                                pulpie_rt_text_output *out);

/* ---- The engine's page stages (core/src/engine/ffi.rs) ----------------------------------- */

/* How one page is prepared (pulpie_rt_prepare_page). */
typedef struct {
    uint32_t struct_size;
    int64_t max_input_bytes; /* a longer page is cut (at a character boundary); < 0: no limit */
    int64_t max_page_tokens; /* the chunks kept; < 0: no limit */
    int64_t cutoff_length;   /* simplify's cut of long inline runs, in characters */
    int64_t max_tokens;      /* tokens per chunk */
    int64_t sep_id;
    int64_t bos_id;          /* < 0: none */
    int64_t eos_id;          /* < 0: none */
    uint32_t features;       /* PULPIE_RT_LAYOUT_* */
    uint32_t segmentation;   /* PULPIE_RT_SIMPLIFY_* flags */
} pulpie_rt_prepare_options;

/* A prepared page; its arrays are released with pulpie_rt_prepare_free. */
typedef struct {
    uint8_t *ids_ptr;        /* the blocks' ids joined */
    size_t ids_len;
    uint64_t *id_lens_ptr;   /* n_blocks lengths, PULPIE_RT_NO_ID for a block without one */
    size_t n_blocks;
    int64_t *token_ids_ptr;  /* every chunk's token ids */
    size_t token_ids_len;
    uint64_t *token_ends_ptr; /* n_chunks ends into token_ids */
    uint64_t *block_indices_ptr; /* every chunk's block indices */
    size_t block_indices_len;
    uint64_t *block_ends_ptr; /* n_chunks ends into block_indices */
    size_t n_chunks;
    uint8_t *map_ptr;        /* map_html */
    size_t map_len;
    float *features_ptr;     /* n_blocks x n_features, or NULL */
    size_t features_len;
    size_t n_features;
    uint8_t *truncated_ptr;  /* what the limits cut, or NULL */
    size_t truncated_len;
    size_t n_classified;     /* the blocks the chunks hold */
} pulpie_rt_prepare_output;

/* The decoding of a page's block scores into labels (the bundle's "decoding", decode.rs
 * Decoding). A has_X of 0 leaves X out. */
typedef struct {
    uint32_t struct_size;
    uint32_t margins;             /* 0: the argmax at each SEP; 1: by margins */
    uint32_t has_threshold;
    double threshold;             /* main above it (margins) */
    uint32_t keep_best;           /* a page keeps its best block */
    uint32_t expected_f1;         /* the blocks of the best expected word F1 */
    uint32_t has_container_prior;
    double container_prior[2];    /* share, shift: outside the dominant container, lower by
                                     shift */
    uint32_t has_story_prior;
    double story_prior[2];        /* share, shift: before the container prior, the linked
                                     blocks outside the story's container lowered by shift */
    uint32_t continue_story;      /* a main prose block's story goes on */
    uint32_t has_short_story;
    double short_story[3];        /* words, shift, prose_shift: where the story's container
                                     expects fewer main prose words, the story prior lowers
                                     the linked blocks outside it by shift and its prose by
                                     prose_shift (needs has_story_prior) */
} pulpie_rt_decoding;

/* One page's chunks and their SEP outputs (pulpie_rt_decide_blocks): chunk c holds the blocks
 * block_indices[block_ends[c-1]..block_ends[c]] and the outputs
 * values[value_ends[c-1]..value_ends[c]]. */
typedef struct {
    uint32_t struct_size;
    size_t n_blocks;
    const uint64_t *block_indices;
    const uint64_t *block_ends;
    size_t n_chunks;
    uint32_t kind;               /* PULPIE_RT_OUTPUTS_* */
    const float *values;
    const uint64_t *value_ends;
    size_t labels;               /* per SEP, for PULPIE_RT_OUTPUTS_LOGITS */
    const float *features;       /* n_blocks x n_features, or NULL */
    size_t n_features;
    size_t n_classified;         /* the blocks the page's limits kept */
} pulpie_rt_sep_outputs;

typedef struct {
    uint8_t *html_ptr;
    size_t html_len;
    uint8_t *markdown_ptr;
    size_t markdown_len;
    uint32_t empty_reason; /* PULPIE_RT_EMPTY_* */
} pulpie_rt_finish_output;

/* A page's text prepared: cut, simplified, split into blocks, tokenized (tokenizer NULL: no
 * tokens, no chunks), packed into chunks, block features. PULPIE_RT_FAILED: the page's
 * "<stage>: <reason>". */
int32_t pulpie_rt_prepare_page(const pulpie_rt_tokenizer *tokenizer, const uint8_t *text,
                               size_t text_len, const pulpie_rt_prepare_options *options,
                               pulpie_rt_prepare_output *out, pulpie_rt_message *error);
void pulpie_rt_prepare_free(pulpie_rt_prepare_output *out);
/* blocks.extract_blocks: 4 values per block (start, end, id start, id end; PULPIE_RT_NO_ID:
 * no id), released with pulpie_rt_ort_free_u64s. */
int32_t pulpie_rt_extract_blocks(const uint8_t *text, size_t text_len, uint64_t **spans,
                                 size_t *n_blocks, pulpie_rt_message *error);
int32_t pulpie_rt_pack_chunks(const uint32_t *ids, const uint64_t *ends, size_t n_blocks,
                              size_t max_tokens, int64_t sep_id, int64_t bos_id, int64_t eos_id,
                              pulpie_rt_prepare_output *out, pulpie_rt_message *error);
/* One page's labels (out: n_blocks predictions, 1 main) from its SEP outputs, the rescorer's
 * scores (rescorer NULL: none) and the decoding. PULPIE_RT_FAILED: "rescore: ...". */
int32_t pulpie_rt_decide_blocks(const pulpie_rt_rescorer *rescorer,
                                const pulpie_rt_decoding *decoding,
                                const pulpie_rt_sep_outputs *page, uint64_t *out,
                                pulpie_rt_message *error);
/* What the page flow reads from a bundle directory, read by the engine's reader: JSON in out
 * (the model file, tokens, max_tokens, the profile's transformer, segmentation, rescorer and
 * decoding, the decoding as pulpie_rt_decoding's fields by name, the layout of the block
 * features a page is prepared with). profile NULL: the default. */
int32_t pulpie_rt_py_bundle_info(const uint8_t *path, size_t path_len, const uint8_t *profile,
                                 size_t profile_len, pulpie_rt_message *out,
                                 pulpie_rt_message *error);
/* The columns of blocks in context (features::context), out_len checked. */
int32_t pulpie_rt_context_features(const float *features, size_t rows, size_t columns,
                                   float *out, size_t out_len, pulpie_rt_message *error);
int32_t pulpie_rt_stage_features(const double *probabilities, size_t n, const float *features,
                                 size_t rows, size_t columns, float *out, size_t out_len,
                                 pulpie_rt_message *error);
/* The main content once the labels are known (whole_text: a page without blocks). */
int32_t pulpie_rt_finish_page(const uint8_t *map_html, size_t map_len, const uint8_t *main_ids,
                              size_t main_ids_len, uint32_t whole_text, uint32_t any_main,
                              pulpie_rt_finish_output *out, pulpie_rt_message *error);

/* ---- ONNX Runtime, the rescorers, the batcher (core/src/ort/ffi.rs) ---------------------- */

typedef struct {
    float *ptr; /* released with pulpie_rt_ort_free_floats */
    size_t len;
    size_t labels;
} pulpie_rt_floats;

typedef struct {
    uint64_t *order_ptr; /* the items in row order, batch after batch */
    size_t order_len;
    uint64_t *ends_ptr;  /* each batch's end into order */
    uint64_t *bucket_lengths_ptr;
    uint64_t *bucket_rows_ptr; /* 0: no cap */
    size_t batches;
} pulpie_rt_batches;

/* library: the libonnxruntime.so to load (empty: the search). */
int32_t pulpie_rt_ort_load(const uint8_t *library, size_t library_len, const pulpie_rt_ort **out,
                           pulpie_rt_message *error);
int32_t pulpie_rt_ort_describe(const pulpie_rt_ort *ort, pulpie_rt_message *out);
void pulpie_rt_ort_release(const pulpie_rt_ort *ort);
/* provider: 0 CPU, 1 CUDA, 2 TensorRT (GPU device); model: a path, or with from_bytes the
 * model's bytes. */
int32_t pulpie_rt_ort_classifier_open(const pulpie_rt_ort *ort, const uint8_t *model,
                                      size_t model_len, uint32_t from_bytes,
                                      uint32_t intra_op_threads, uint32_t inter_op_threads,
                                      uint32_t provider, uint32_t device,
                                      pulpie_rt_classifier **out, pulpie_rt_message *error);
int32_t pulpie_rt_ort_classifier_run(const pulpie_rt_classifier *classifier,
                                     const int64_t *input_ids, size_t ids_len,
                                     const int64_t *attention_mask, size_t mask_len, size_t rows,
                                     size_t length, pulpie_rt_floats *out,
                                     pulpie_rt_message *error);
int32_t pulpie_rt_ort_classifier_predict(const pulpie_rt_classifier *classifier,
                                         const int64_t *input_ids, size_t n_tokens,
                                         const uint64_t *cumulative, size_t rows, int64_t pad_id,
                                         int64_t sep_id, pulpie_rt_floats *out,
                                         uint64_t *sep_counts, pulpie_rt_message *error);
void pulpie_rt_ort_classifier_free(pulpie_rt_classifier *classifier);
void pulpie_rt_ort_free_floats(float *ptr, size_t len);
void pulpie_rt_ort_free_u64s(uint64_t *ptr, size_t len);
int32_t pulpie_rt_ort_rescorer_open(const pulpie_rt_ort *ort, const uint8_t *model,
                                    size_t model_len, uint32_t from_bytes, double margin_weight,
                                    pulpie_rt_rescorer **out, pulpie_rt_message *error);
int32_t pulpie_rt_ort_rescorer_run(const pulpie_rt_rescorer *rescorer, const float *features,
                                   size_t rows, size_t columns, const float *margins,
                                   float *probabilities, float *log_odds, float *scores,
                                   pulpie_rt_message *error);
void pulpie_rt_ort_rescorer_free(pulpie_rt_rescorer *rescorer);
int32_t pulpie_rt_ort_rescorer_trees(const pulpie_rt_rescorer *rescorer, pulpie_rt_message *out);
int32_t pulpie_rt_ort_context_rescorer_open(const pulpie_rt_ort *ort, const uint8_t *model,
                                            size_t model_len, const uint8_t *first_stage,
                                            size_t first_stage_len,
                                            pulpie_rt_context_rescorer **out,
                                            pulpie_rt_message *error);
int32_t pulpie_rt_ort_context_rescorer_log_odds(const pulpie_rt_context_rescorer *rescorer,
                                                const float *features, size_t rows,
                                                size_t columns, float *log_odds,
                                                pulpie_rt_message *error);
int32_t pulpie_rt_ort_context_rescorer_trees(const pulpie_rt_context_rescorer *rescorer,
                                             pulpie_rt_message *out);
void pulpie_rt_ort_context_rescorer_free(pulpie_rt_context_rescorer *rescorer);
/* The batcher over item lengths (max_batch_attention 0: none; default_bucket_list 1: the
 * default buckets, else n_buckets of bucket_lengths / bucket_rows). */
int32_t pulpie_rt_ort_make_batches(const uint64_t *lengths, size_t n, uint64_t max_batch_tokens,
                                   uint64_t max_batch_attention, uint32_t default_bucket_list,
                                   const uint64_t *bucket_lengths, const uint64_t *bucket_rows,
                                   size_t n_buckets, uint32_t padded, pulpie_rt_batches *out,
                                   pulpie_rt_message *error);
/* GPU device as the driver describes it: "name\nmajor.minor\nfolder". */
int32_t pulpie_rt_ort_gpu(uint32_t device, pulpie_rt_message *out, pulpie_rt_message *error);
int32_t pulpie_rt_ort_tensorrt_build(const pulpie_rt_ort *ort, const uint8_t *model,
                                     size_t model_len, uint32_t device, uint32_t fp32,
                                     size_t max_batch_tokens, const uint8_t *cache_dir,
                                     size_t cache_dir_len, pulpie_rt_message *out,
                                     pulpie_rt_message *error);
/* The tree kernel alone, over an ONNX model's bytes. */
int32_t pulpie_rt_trees_open(const uint8_t *model, size_t model_len, pulpie_rt_trees **out,
                             pulpie_rt_message *error);
int32_t pulpie_rt_trees_predict(const pulpie_rt_trees *trees, const float *features, size_t rows,
                                size_t columns, float *probabilities, int64_t *labels,
                                pulpie_rt_message *error);
void pulpie_rt_trees_free(pulpie_rt_trees *trees);

/* ---- The Python doors' engine calls (core/src/capi.rs) ----------------------------------- */

/* Everything of a result in one call: pointers into the result, valid until it is freed. */
typedef struct {
    const uint8_t *markdown;
    size_t markdown_len;
    const uint8_t *html;
    size_t html_len;
    const char *error;
    const char *truncated;
    const char *empty_reason;
    const char *encoding;
    const uint8_t *label_ids; /* the labelled blocks' ids, each followed by a NUL */
    size_t label_ids_len;
    const uint8_t *label_main; /* one byte per label: 1 main, 0 other */
    size_t n_labels;
    const float *label_scores; /* one score per label (pulpie_rt_result_score) */
    double threshold;          /* pulpie_rt_result_threshold */
    const char *title; /* the page's metadata (pulpie_rt.h's accessors of the same names) */
    const uint8_t *authors; /* the authors' names, each followed by a NUL */
    size_t authors_len;
    const char *published;
    const char *modified;
    const char *site_name;
    const char *language;
    const char *canonical_url;
    const char *description;
} pulpie_rt_py_result_view;

/* pulpie_rt_extract_pages_with where is_text[i] 1 reads page i as text (UTF-8, surrogatepass;
 * no encoding recorded). */
int pulpie_rt_py_extract(pulpie_rt_engine *engine, const char *const *html, const size_t *len,
                         const char *const *content_type, const uint8_t *is_text, size_t n,
                         const pulpie_rt_extract_options *options, pulpie_rt_result **out,
                         char **err);
void pulpie_rt_py_result_view(const pulpie_rt_result *result, pulpie_rt_py_result_view *view);
/* out[4]: row-by-row fallbacks, model calls, real tokens, computed (padded) tokens. */
void pulpie_rt_py_engine_counters(const pulpie_rt_engine *engine, uint64_t *out);
/* The sequence-length buckets: their count, the first capacity written to out. */
size_t pulpie_rt_py_seq_buckets(uint64_t *out, size_t capacity);
uint64_t pulpie_rt_py_max_batch_attention(void);

#ifdef __cplusplus
}
#endif

#endif /* PULPIE_RT_INTERNAL_H */
