/*
 * pulpie_rt.h — the C interface of libpulpie_rt: main-content extraction from raw HTML with a
 * Pulpie model, the whole path (HTML parsing, segmentation, tokenizer, model through ONNX
 * Runtime, labels, reconstruction, Markdown) in-process, without Python.
 *
 *   pulpie_rt_options o;
 *   pulpie_rt_options_init(&o);                    // o.model NULL: the embedded default model
 *   pulpie_rt_engine *engine; char *err;
 *   if (pulpie_rt_engine_open(&o, &engine, &err)) { fprintf(stderr, "%s\n", err);
 *                                                  pulpie_rt_string_free(err); exit(1); }
 *   pulpie_rt_result *r;
 *   if (pulpie_rt_extract(engine, html, html_len, NULL, &r, &err) == PULPIE_RT_OK) {
 *       if (pulpie_rt_result_error(r)) ... the page failed: the message names the stage
 *       else fwrite(pulpie_rt_result_markdown(r, &n), 1, n, stdout);
 *       pulpie_rt_result_free(r);
 *   }
 *   pulpie_rt_engine_close(engine);
 *
 * Output: for the same model, profile and page, the Markdown, HTML, labels, `truncated` and
 * `empty_reason` are those of Python's `pulpie_rt.Extractor(model, profile=...).extract(html)`
 * (and of `extract_batch` for `pulpie_rt_extract_batch`), byte for byte.
 *
 * Threads: an engine is immutable once open; any number of threads may call
 * pulpie_rt_extract / pulpie_rt_extract_batch on one engine at once. Close it when no thread
 * uses it any more. A result belongs to the caller; it may be read from any thread.
 *
 * Errors: functions returning int return PULPIE_RT_OK (0) or one of the PULPIE_RT_ERR_*
 * codes below, and then, when `err` is not NULL, set *err to a message (UTF-8) the caller
 * releases with pulpie_rt_string_free (*err is NULL on success). A page that cannot be
 * extracted is not a failed call: its result has pulpie_rt_result_error set to
 * "<stage>: <reason>" and empty content. No input makes the library abort or crash the
 * process: internal faults are caught and reported (PULPIE_RT_ERR_INTERNAL, or the page's
 * error).
 *
 * ONNX Runtime is loaded at run time (no link-time dependency), from, in this order:
 * options.ort_library; $PULPIE_RT_ORT_LIB; libonnxruntime.so.1 in the folder of
 * libpulpie_rt.so (`make capi` links the onnxruntime wheel's capi/libonnxruntime.so.1.* there);
 * libonnxruntime.so.1 through the dynamic linker's search (LD_LIBRARY_PATH, ld.so.cache). An
 * explicit path (option or variable) is used alone: a wrong one is an error, not a fallback.
 * ONNX Runtime 1.18 or newer; the CUDA and TensorRT backends need a GPU build of it (the
 * onnxruntime-gpu wheel's copy).
 */
#ifndef PULPIE_RT_H
#define PULPIE_RT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI this header describes; pulpie_rt_abi_version() returns the library's. */
#define PULPIE_RT_ABI_VERSION 7u

/* Status codes. */
#define PULPIE_RT_OK 0
#define PULPIE_RT_ERR_ARGUMENT 1 /* a NULL pointer where one is required, options.struct_size
                                    too small, an unknown backend, a negative count */
#define PULPIE_RT_ERR_INTERNAL 2 /* a fault inside the library, caught (a bug: please report
                                    the message) */
#define PULPIE_RT_ERR_MODEL 3    /* the model: not a bundle, a missing or unreadable file, a
                                    manifest this runtime cannot read, no embedded model, an
                                    unknown profile */
#define PULPIE_RT_ERR_RUNTIME 4  /* ONNX Runtime: library not found or too old, the model does
                                    not load, the backend is not available */

/* ABI 4: pulpie_rt_options.favor, a named shift of the bundle's decision threshold (its
 * decoding's main_margin, in the blocks' score units, log-odds): precision keeps fewer blocks
 * (the threshold raised by 1), recall more (lowered by 1), balanced the bundle's own. */
#define PULPIE_RT_FAVOR_BALANCED 0
#define PULPIE_RT_FAVOR_PRECISION 1
#define PULPIE_RT_FAVOR_RECALL 2
/* ABI 6: pulpie_rt_extract_options' favor (and page_favor's values) that asks for the
 * engine's own, its options.favor (not a PULPIE_RT_FAVOR_* value: no name of its own). */
#define PULPIE_RT_ENGINE_FAVOR -1

typedef struct pulpie_rt_engine pulpie_rt_engine; /* opened once, shared by threads */
typedef struct pulpie_rt_result pulpie_rt_result; /* owned by the caller */

/*
 * Options of pulpie_rt_engine_open. Always start from pulpie_rt_options_init, which sets
 * struct_size and every default; later ABI versions only append fields, and the library
 * reads no field past struct_size (those keep their defaults). A struct_size that is not the
 * size of some ABI's struct is read as the largest such size below it (no field is read in
 * part).
 */
typedef struct {
    uint32_t struct_size;
    const char *model;       /* a bundle directory (as `pulpie-rt export` writes it), or NULL:
                                the default model embedded in the library */
    const char *backend;     /* "cpu" (NULL: the same), "cuda" or "tensorrt" (ONNX Runtime's
                                execution providers: pulpie_rt_provider_name) */
    int32_t device_id;       /* the GPU for "cuda" / "tensorrt"; default 0 */
    int32_t threads;         /* ONNX Runtime's intra-op threads per engine; 0 (default): its
                                own default, one per physical core */
    /* ABI 1 additions beyond the minimum: */
    const char *ort_library; /* the libonnxruntime.so to load; NULL: see the search above */
    int64_t max_input_bytes; /* a longer page is cut to its first max_input_bytes (UTF-8, at
                                a character boundary) before parsing; default 16 MiB; < 0: no
                                limit */
    int64_t max_page_tokens; /* the model reads a page's first chunks up to this many tokens;
                                blocks in later chunks come out "other"; default 131072;
                                < 0: no limit. pulpie_rt_result_truncated says what was cut */
    int64_t max_batch_tokens; /* padded tokens per model batch; default 16384; > 0 */
    /* ABI 2 additions (a library of ABI 1 ignores them: check pulpie_rt_abi_version() >= 2): */
    const char *profile;     /* the bundle's speed/quality profile (manifest "profiles"; the
                                embedded default model: "fast", its block rescorer alone in two
                                stages over blocks in context, no transformer, or "accurate",
                                the transformer and its rescorer); NULL: the bundle's
                                default_profile. A name the bundle lacks, or any name for a
                                bundle without profiles: PULPIE_RT_ERR_MODEL naming what it has */
    /* ABI 3 additions (a library of ABI 2 ignores them): */
    int64_t cutoff_length;   /* simplify's cut of long runs of inline text, in characters
                                (pulpie_rt.Extractor's cutoff_length); default 500; >= 0 */
    /* ABI 4 additions (a library of ABI 3 ignores them): */
    int32_t favor;           /* PULPIE_RT_FAVOR_*: default balanced */
    /* ABI 7 additions (a library of ABI 6 ignores them): */
    int64_t metadata;        /* 1 (default): read each page's metadata (pulpie_rt_result_title
                                ...); 0: do not (those accessors give NULL) */
} pulpie_rt_options;

uint32_t pulpie_rt_abi_version(void);
const char *pulpie_rt_version(void); /* the library's version, e.g. "0.1.0" (static) */
/* ABI 3: the name and meaning of a status code, e.g. "PULPIE_RT_ERR_MODEL: the model cannot
 * be used" (static; "unknown status" for a code this library does not return). */
const char *pulpie_rt_status_string(int status);

/* Fills *o with the defaults of this ABI (struct_size = sizeof(pulpie_rt_options)). */
void pulpie_rt_options_init(pulpie_rt_options *o);

/* Opens a model: reads the bundle, loads ONNX Runtime, creates the sessions. o NULL: all
 * defaults. On success *out is the engine; otherwise *out is NULL. */
int pulpie_rt_engine_open(const pulpie_rt_options *o, pulpie_rt_engine **out, char **err);
void pulpie_rt_engine_close(pulpie_rt_engine *e); /* NULL: nothing */
/* ABI 3: what runs the engine's model: "cpu", "cuda" or "tensorrt" (the ONNX Runtime
 * execution provider its session runs on), or "none" when the profile runs no model (the
 * default model's "fast": its block rescorer alone, on the CPU). Static; NULL for NULL. */
const char *pulpie_rt_engine_provider(const pulpie_rt_engine *e);

/* ABI 3: the execution providers this library knows, by index 0, 1, ... (NULL past the
 * last; static): pulpie_rt_provider_name is the `backend` option's spelling ("cpu", "cuda",
 * "tensorrt"), pulpie_rt_provider_device how its device is written ("cpu", or "cuda:N": GPU N,
 * the option `device_id`). Every door's choices are read from here. */
const char *pulpie_rt_provider_name(uint32_t index);
const char *pulpie_rt_provider_device(uint32_t index);

/* ABI 3: what to tell the user once about the engine's devices (a GPU asked for a profile
 * that runs no model; TensorRT engines built or loaded, and where), or NULL. Asking for "cuda"
 * or "tensorrt" where it cannot run fails at pulpie_rt_engine_open with PULPIE_RT_ERR_RUNTIME
 * and the reason (no driver, no such GPU, a provider that cannot load its CUDA, cuDNN or
 * TensorRT libraries); it never runs on the CPU. Free with pulpie_rt_string_free. */
char *pulpie_rt_engine_notice(const pulpie_rt_engine *e);

/*
 * Extracts one page: `html` is `len` bytes in any encoding; NULL with len 0 is an empty page.
 * They are decoded as every entry point of pulpie-rt decodes page bytes: a byte order mark,
 * else the charset of `content_type` (the page's Content-Type header, or NULL), else a
 * <meta charset> / http-equiv in the page, else the encoding detector, else UTF-8 (invalid
 * bytes replaced by U+FFFD). On PULPIE_RT_OK *out is the page's result (check
 * pulpie_rt_result_error); otherwise *out is NULL.
 */
int pulpie_rt_extract(pulpie_rt_engine *e, const char *html, size_t len, const char *content_type,
                      pulpie_rt_result **out, char **err);

/*
 * Extracts n pages in one call (their chunks share the model's batches: faster than n calls
 * for small pages). out points to n result pointers the library fills (all NULL when the call
 * fails); each result is freed with pulpie_rt_result_free.
 */
int pulpie_rt_extract_batch(pulpie_rt_engine *e, const char *const *html, const size_t *len,
                            size_t n, pulpie_rt_result **out, char **err);

/*
 * ABI 3: pulpie_rt_extract_batch with each page's transport Content-Type (as
 * pulpie_rt_extract's content_type): content_type is NULL (no page has one) or points to n
 * pointers, each NULL or the page's Content-Type header.
 */
int pulpie_rt_extract_pages(pulpie_rt_engine *e, const char *const *html, const size_t *len,
                            const char *const *content_type, size_t n, pulpie_rt_result **out,
                            char **err);

/*
 * ABI 6: options of one extraction call (pulpie_rt_extract_pages_with), chosen per call on an
 * engine opened once: the favor of one request, or of each page, without a second engine.
 * Always start from pulpie_rt_extract_options_init (struct_size and every default); later ABI
 * versions only append fields, and the library reads no field past struct_size.
 */
typedef struct {
    uint32_t struct_size;
    int32_t favor;              /* PULPIE_RT_FAVOR_* for the call's pages, or
                                   PULPIE_RT_ENGINE_FAVOR (default): the engine's options.favor */
    const int32_t *page_favor;  /* NULL (default), or one value per page: page i's favor
                                   (PULPIE_RT_ENGINE_FAVOR: the call's favor) */
} pulpie_rt_extract_options;

/* Fills *o with the defaults of this ABI (struct_size = sizeof(pulpie_rt_extract_options)). */
void pulpie_rt_extract_options_init(pulpie_rt_extract_options *o);

/*
 * ABI 6: pulpie_rt_extract_pages with options (o NULL: the engine's, as
 * pulpie_rt_extract_pages). A favor decides only which blocks are kept: the model's work is
 * the same, and pages of different favors share its batches. A favor that is no
 * PULPIE_RT_FAVOR_* value fails the call with PULPIE_RT_ERR_ARGUMENT (no page is run).
 */
int pulpie_rt_extract_pages_with(pulpie_rt_engine *e, const char *const *html, const size_t *len,
                                 const char *const *content_type, size_t n,
                                 const pulpie_rt_extract_options *o, pulpie_rt_result **out,
                                 char **err);

/* The main content as Markdown / HTML / plain text: NUL-terminated UTF-8, valid until the
 * result is freed; *len (when len is not NULL) is its length in bytes without the NUL (the
 * Markdown may hold NUL bytes the page had). Empty for a failed page. The text is made on
 * first request (pulpie_rt.PageResult.text). */
const char *pulpie_rt_result_markdown(const pulpie_rt_result *r, size_t *len);
const char *pulpie_rt_result_html(const pulpie_rt_result *r, size_t *len);
const char *pulpie_rt_result_text(const pulpie_rt_result *r, size_t *len);

const char *pulpie_rt_result_error(const pulpie_rt_result *r);        /* NULL when the page succeeded */
const char *pulpie_rt_result_truncated(const pulpie_rt_result *r);    /* what the limits cut, or NULL */
const char *pulpie_rt_result_empty_reason(const pulpie_rt_result *r); /* why the Markdown is empty
                                                                         without an error, or NULL */
/* ABI 3: the encoding the page's bytes were decoded with (its Encoding Standard name, e.g.
 * "UTF-8", "windows-1252", "Shift_JIS"), or NULL for a failed page. */
const char *pulpie_rt_result_encoding(const pulpie_rt_result *r);
uint32_t pulpie_rt_result_n_main(const pulpie_rt_result *r);  /* blocks labelled main */
uint32_t pulpie_rt_result_n_other(const pulpie_rt_result *r); /* blocks labelled other */

/* ABI 7: what the page's own markup says of it, read in the same parse (NULL where it says
 * nothing, or the page failed): sources in order of trust, JSON-LD, OpenGraph and article:*,
 * the other <meta>, <time datetime>, the page's <h1> or <title>. Dates are ISO 8601
 * ("2024-03-05" or "2024-03-05T10:30:00+01:00"), the language an ISO 639 code ("en": the
 * declared one, else detected from the main content), the canonical URL <link rel=canonical>
 * or og:url resolved against <base href> (a relative one as written where there is none). */
const char *pulpie_rt_result_title(const pulpie_rt_result *r);
const char *pulpie_rt_result_published(const pulpie_rt_result *r);
const char *pulpie_rt_result_modified(const pulpie_rt_result *r);
const char *pulpie_rt_result_site_name(const pulpie_rt_result *r);
const char *pulpie_rt_result_language(const pulpie_rt_result *r);
const char *pulpie_rt_result_canonical_url(const pulpie_rt_result *r);
const char *pulpie_rt_result_description(const pulpie_rt_result *r);
/* The authors' names: the index-th (NULL past the end). */
uint32_t pulpie_rt_result_n_authors(const pulpie_rt_result *r);
const char *pulpie_rt_result_authors(const pulpie_rt_result *r, uint32_t index);

/* The labelled blocks, in page order: the index-th block's _item_id (NULL past the end) and
 * *is_main (when not NULL) 1 for main, 0 for other. */
uint32_t pulpie_rt_result_n_labels(const pulpie_rt_result *r);
const char *pulpie_rt_result_label(const pulpie_rt_result *r, uint32_t index, int *is_main);
/* ABI 5: what the labels were decided from (the page inspector's figures). The index-th
 * labelled block's score, the log-odds that it is main as the model (and the bundle's
 * rescorer and priors) scored it, NaN for a block without one (cut by the limits) or past the
 * end; and the page's decision threshold in the same units (the bundle's, moved by
 * options.favor; 0 for a model decoded by the argmax at each SEP, whose score is the margin
 * logit(main) - logit(other)), NaN for a failed page. A block is main when its score is above
 * the threshold, except where the bundle's decoding decides from the page around it: with no
 * block above it the best one is kept (keep_best_block), a story's prose goes on to its end
 * (continue_story), or an expected-F1 selection. */
float pulpie_rt_result_score(const pulpie_rt_result *r, uint32_t index);
double pulpie_rt_result_threshold(const pulpie_rt_result *r);

void pulpie_rt_result_free(pulpie_rt_result *r); /* NULL: nothing */
void pulpie_rt_string_free(char *s);             /* an *err message; NULL: nothing */

#ifdef __cplusplus
}
#endif

#endif /* PULPIE_RT_H */
