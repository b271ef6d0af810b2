/*
 * extract — main content of web pages as Markdown, with libpulpie_rt (no Python).
 *
 *   extract [options] page.html ...      Markdown of each page on stdout ('-' reads stdin)
 *   extract [options] --jsonl pages.jsonl one JSON line per page in, one per page out:
 *                                         {"id": …, "html": "…"} → the page's record, the
 *                                         fields every door writes (runtime/flow/schema.py):
 *                                         {"id": …, "markdown": "…", "n_main": N,
 *                                         "n_other": N, "error": null | "…", "truncated": …,
 *                                         "empty_reason": …, "encoding": …, "title": …,
 *                                         "authors": […], "published": …, "modified": …,
 *                                         "site_name": …, "language": …, "canonical_url": …,
 *                                         "description": …}
 * options:
 *   --model DIR      a model bundle directory (default: the embedded default model)
 *   --profile NAME   the bundle's profile ("fast" or "accurate" for the default model;
 *                    default: its default_profile)
 *   --threads N      N threads sharing one engine (default 1); output stays in input order
 *   --batch N        pages per pulpie_rt_extract_batch call (default 1: pulpie_rt_extract)
 *   --ort-threads N  ONNX Runtime's intra-op threads per engine (default: its own)
 *   --max-batch-tokens N  padded tokens per model call (default 16384; a row longer than N
 *                    is a call of its own, so 1 gives one row per call)
 *   --backend NAME   cpu (default), cuda or tensorrt (ONNX Runtime's providers; a GPU that
 *                    cannot run is an error, never a CPU run)
 *   --device N       the GPU for cuda / tensorrt (default 0)
 *   --labels         --jsonl: add "labels", {block id: "main" | "other"} in page order (the
 *                    json format's record)
 *   --timing         print to stderr the seconds taken to open the engine and to extract,
 *                    and the provider the model runs on
 *
 * Build: cc -O2 -Ibuild/capi examples/c/extract.c -Lbuild/capi -lpulpie_rt -lpthread \
 *           -Wl,-rpath,'$ORIGIN' -o build/capi/extract      (what `make capi` runs), or
 *        against an installed copy (`make install PREFIX=...`, docs/packaging.md):
 *        cc examples/c/extract.c $(pkg-config --cflags --libs pulpie_rt) -o extract
 * Exit status: 0 when every page gave a result (a page's own error is in its output line or,
 * for HTML files, on stderr), 1 on a usage, I/O or engine error, 2 when a page failed.
 */
#include "pulpie_rt.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    char *id;   /* the JSON text of the input's "id" (NULL: none), or the file name */
    char *html; /* the page's bytes */
    size_t len;
    pulpie_rt_result *result;
} page;

typedef struct {
    pulpie_rt_engine *engine;
    page *pages;
    size_t n_pages;
    size_t batch;
    size_t next; /* the next page to take, under lock */
    pthread_mutex_t lock;
    int failed_call; /* a pulpie_rt_extract* call failed (not a page: the call) */
} work;

static void die(const char *what, const char *why) {
    fprintf(stderr, "extract: %s: %s\n", what, why);
    exit(1);
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) die("out of memory", strerror(errno));
    return p;
}

static char *read_stream(FILE *f, size_t *len) {
    size_t cap = 1 << 16, n = 0;
    char *buf = xmalloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            if (!buf) die("out of memory", strerror(errno));
        }
    }
    if (ferror(f)) die("read", strerror(errno));
    *len = n;
    return buf;
}

/* ---- a small JSON reader: what one input line needs ---- */

static const char *skip_space(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
    return p;
}

static int hex4(const char *p, const char *end, unsigned *out) {
    if (end - p < 4) return 0;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

static size_t put_utf8(char *out, unsigned c) {
    if (c < 0x80) { out[0] = (char)c; return 1; }
    if (c < 0x800) { out[0] = (char)(0xC0 | c >> 6); out[1] = (char)(0x80 | (c & 0x3F)); return 2; }
    if (c < 0x10000) {
        out[0] = (char)(0xE0 | c >> 12); out[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        out[2] = (char)(0x80 | (c & 0x3F)); return 3;
    }
    out[0] = (char)(0xF0 | c >> 18); out[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((c >> 6) & 0x3F)); out[3] = (char)(0x80 | (c & 0x3F)); return 4;
}

/* A JSON string at p (on its opening quote): its UTF-8 bytes in a new buffer (*len), and where
 * the string ends. A lone surrogate escape becomes U+FFFD. NULL on malformed input. */
static const char *json_string(const char *p, const char *end, char **out, size_t *len) {
    if (p >= end || *p != '"') return NULL;
    p++;
    char *buf = xmalloc((size_t)(end - p) + 1), *w = buf;
    while (p < end && *p != '"') {
        if (*p != '\\') { *w++ = *p++; continue; }
        if (++p >= end) break;
        char c = *p++;
        switch (c) {
        case '"': *w++ = '"'; break;
        case '\\': *w++ = '\\'; break;
        case '/': *w++ = '/'; break;
        case 'b': *w++ = '\b'; break;
        case 'f': *w++ = '\f'; break;
        case 'n': *w++ = '\n'; break;
        case 'r': *w++ = '\r'; break;
        case 't': *w++ = '\t'; break;
        case 'u': {
            unsigned u, low;
            if (!hex4(p, end, &u)) { free(buf); return NULL; }
            p += 4;
            if (u >= 0xD800 && u < 0xDC00 && end - p >= 6 && p[0] == '\\' && p[1] == 'u' &&
                hex4(p + 2, end, &low) && low >= 0xDC00 && low < 0xE000) {
                u = 0x10000 + ((u - 0xD800) << 10) + (low - 0xDC00);
                p += 6;
            } else if (u >= 0xD800 && u < 0xE000) {
                u = 0xFFFD;
            }
            w += put_utf8(w, u);
            break;
        }
        default: free(buf); return NULL;
        }
    }
    if (p >= end) { free(buf); return NULL; }
    *w = 0;
    *out = buf;
    *len = (size_t)(w - buf);
    return p + 1;
}

/* Skips any JSON value at p; returns its end (NULL when malformed). */
static const char *json_skip(const char *p, const char *end) {
    p = skip_space(p, end);
    if (p >= end) return NULL;
    if (*p == '"') {
        for (p++; p < end && *p != '"'; p++)
            if (*p == '\\') p++;
        return p < end ? p + 1 : NULL;
    }
    if (*p == '{' || *p == '[') {
        int depth = 0;
        for (; p < end; p++) {
            if (*p == '"') { p = json_skip(p, end); if (!p) return NULL; p--; }
            else if (*p == '{' || *p == '[') depth++;
            else if (*p == '}' || *p == ']') { if (--depth == 0) return p + 1; }
        }
        return NULL;
    }
    while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n' && *p != '\r' && *p != '\t') p++;
    return p;
}

/* One input line: {"id": …, "html": "…", …}. 0 when it is not such an object. */
static int parse_line(const char *p, const char *end, page *out) {
    out->id = NULL;
    out->html = NULL;
    p = skip_space(p, end);
    if (p >= end || *p != '{') return 0;
    p = skip_space(p + 1, end);
    while (p < end && *p != '}') {
        char *key;
        size_t key_len;
        p = json_string(p, end, &key, &key_len);
        if (!p) return 0;
        p = skip_space(p, end);
        if (p >= end || *p != ':') { free(key); return 0; }
        p = skip_space(p + 1, end);
        const char *value_start = p;
        if (strcmp(key, "html") == 0 && p < end && *p == '"') {
            free(out->html);
            p = json_string(p, end, &out->html, &out->len);
        } else {
            p = json_skip(p, end);
            if (p && strcmp(key, "id") == 0) {
                free(out->id);
                out->id = xmalloc((size_t)(p - value_start) + 1);
                memcpy(out->id, value_start, (size_t)(p - value_start));
                out->id[p - value_start] = 0;
            }
        }
        free(key);
        if (!p) return 0;
        p = skip_space(p, end);
        if (p < end && *p == ',') p = skip_space(p + 1, end);
    }
    return p < end;
}

static void write_json_string(FILE *f, const char *s, size_t n);

/* A NUL-terminated string as JSON, or null. */
static void write_json_or_null(FILE *f, const char *s) {
    if (s) write_json_string(f, s, strlen(s));
    else fputs("null", f);
}

static void write_json_string(FILE *f, const char *s, size_t n) {
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (c < 0x20) fprintf(f, "\\u%04x", c);
            else fputc(c, f);
        }
    }
    fputc('"', f);
}

/* ---- the work: threads take batches of pages from a shared counter ---- */

static void *worker(void *arg) {
    work *w = arg;
    const char **html = xmalloc(w->batch * sizeof *html);
    size_t *len = xmalloc(w->batch * sizeof *len);
    pulpie_rt_result **out = xmalloc(w->batch * sizeof *out);
    for (;;) {
        pthread_mutex_lock(&w->lock);
        size_t start = w->next, n = w->n_pages - start < w->batch ? w->n_pages - start : w->batch;
        w->next += n;
        pthread_mutex_unlock(&w->lock);
        if (n == 0) break;
        char *err = NULL;
        int status;
        if (w->batch == 1) {
            page *p = &w->pages[start];
            status = pulpie_rt_extract(w->engine, p->html, p->len, NULL, &p->result, &err);
        } else {
            for (size_t i = 0; i < n; i++) {
                html[i] = w->pages[start + i].html;
                len[i] = w->pages[start + i].len;
            }
            status = pulpie_rt_extract_batch(w->engine, html, len, n, out, &err);
            for (size_t i = 0; status == PULPIE_RT_OK && i < n; i++) w->pages[start + i].result = out[i];
        }
        if (status != PULPIE_RT_OK) {
            fprintf(stderr, "extract: pulpie_rt_extract failed (%d): %s\n", status, err ? err : "");
            pulpie_rt_string_free(err);
            pthread_mutex_lock(&w->lock);
            w->failed_call = 1;
            pthread_mutex_unlock(&w->lock);
        }
    }
    free(html);
    free(len);
    free(out);
    return NULL;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static long number(const char *flag, const char *value) {
    char *end;
    long n = value ? strtol(value, &end, 10) : 0;
    if (!value || *end || n < 0) die(flag, "needs a non-negative number");
    return n;
}

int main(int argc, char **argv) {
    pulpie_rt_options options;
    pulpie_rt_options_init(&options);
    long threads = 1, batch = 1;
    int jsonl = 0, timing = 0, labels = 0;
    char **inputs = xmalloc((size_t)argc * sizeof *inputs);
    size_t n_inputs = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--model") == 0 && i + 1 < argc) options.model = argv[++i];
        else if (strcmp(argv[i], "--profile") == 0 && i + 1 < argc) options.profile = argv[++i];
        else if (strcmp(argv[i], "--threads") == 0) threads = number("--threads", argv[++i]);
        else if (strcmp(argv[i], "--batch") == 0) batch = number("--batch", argv[++i]);
        else if (strcmp(argv[i], "--ort-threads") == 0) options.threads = (int32_t)number("--ort-threads", argv[++i]);
        else if (strcmp(argv[i], "--max-batch-tokens") == 0) {
            options.max_batch_tokens = number("--max-batch-tokens", argv[++i]);
            if (options.max_batch_tokens < 1) die("--max-batch-tokens", "needs a positive number");
        }
        else if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) options.backend = argv[++i];
        else if (strcmp(argv[i], "--device") == 0) options.device_id = (int32_t)number("--device", argv[++i]);
        else if (strcmp(argv[i], "--labels") == 0) labels = 1;
        else if (strcmp(argv[i], "--jsonl") == 0) jsonl = 1;
        else if (strcmp(argv[i], "--timing") == 0) timing = 1;
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs("usage: extract [--model DIR] [--profile NAME] [--threads N] [--batch N] [--ort-threads N] "
                  "[--max-batch-tokens N] [--backend cpu|cuda|tensorrt] [--device N] [--labels] [--timing] "
                  "(page.html ... | --jsonl pages.jsonl ...)\n", stdout);
            return 0;
        } else inputs[n_inputs++] = argv[i];
    }
    if (n_inputs == 0) die("usage", "extract [--model DIR] [--profile NAME] [--threads N] [--batch N] (page.html ... | --jsonl pages.jsonl ...)");
    if (threads < 1) threads = 1;
    if (batch < 1) batch = 1;

    size_t n_pages = 0, cap = 64;
    page *pages = xmalloc(cap * sizeof *pages);
    for (size_t i = 0; i < n_inputs; i++) {
        FILE *f = strcmp(inputs[i], "-") == 0 ? stdin : fopen(inputs[i], "rb");
        if (!f) die(inputs[i], strerror(errno));
        size_t len;
        char *data = read_stream(f, &len);
        if (f != stdin) fclose(f);
        if (!jsonl) {
            if (n_pages == cap) pages = realloc(pages, (cap *= 2) * sizeof *pages);
            pages[n_pages++] = (page){inputs[i], data, len, NULL};
            continue;
        }
        const char *p = data, *end = data + len;
        size_t line_no = 0;
        while (p < end) {
            const char *eol = memchr(p, '\n', (size_t)(end - p));
            if (!eol) eol = end;
            line_no++;
            if (skip_space(p, eol) < eol) {
                if (n_pages == cap) pages = realloc(pages, (cap *= 2) * sizeof *pages);
                if (!pages) die("out of memory", strerror(errno));
                page *pg = &pages[n_pages];
                pg->result = NULL;
                if (!parse_line(p, eol, pg) || !pg->html) {
                    fprintf(stderr, "extract: %s line %zu: not a JSON object with an \"html\" string\n",
                            inputs[i], line_no);
                    return 1;
                }
                n_pages++;
            }
            p = eol + 1;
        }
        free(data);
    }

    char *err = NULL;
    work w = {.pages = pages, .n_pages = n_pages, .batch = (size_t)batch, .next = 0, .failed_call = 0};
    double opening = now();
    if (pulpie_rt_engine_open(&options, &w.engine, &err) != PULPIE_RT_OK) die("cannot open the model", err);
    char *notice = pulpie_rt_engine_notice(w.engine);
    if (notice) fprintf(stderr, "extract: note: %s\n", notice);
    pulpie_rt_string_free(notice);
    double extracting = now();
    pthread_mutex_init(&w.lock, NULL);
    pthread_t *ids = xmalloc((size_t)threads * sizeof *ids);
    for (long t = 0; t < threads; t++)
        if (pthread_create(&ids[t], NULL, worker, &w) != 0) die("pthread_create", strerror(errno));
    for (long t = 0; t < threads; t++) pthread_join(ids[t], NULL);
    pthread_mutex_destroy(&w.lock);
    free(ids);
    if (timing) {
        fprintf(stderr, "timing: open %.3f s, extract %.3f s, %zu pages, provider %s\n",
                extracting - opening, now() - extracting, n_pages, pulpie_rt_engine_provider(w.engine));
    }

    int page_failed = 0;
    for (size_t i = 0; i < n_pages; i++) {
        pulpie_rt_result *r = pages[i].result;
        size_t n = 0;
        const char *markdown = pulpie_rt_result_markdown(r, &n);
        const char *error = r ? pulpie_rt_result_error(r) : "extract: the call failed";
        page_failed |= error != NULL;
        if (jsonl) {
            fputs("{\"id\": ", stdout);
            fputs(pages[i].id ? pages[i].id : "null", stdout);
            fputs(", \"markdown\": ", stdout);
            write_json_string(stdout, markdown, n);
            printf(", \"n_main\": %u, \"n_other\": %u, \"error\": ", pulpie_rt_result_n_main(r),
                   pulpie_rt_result_n_other(r));
            write_json_or_null(stdout, error);
            fputs(", \"truncated\": ", stdout);
            write_json_or_null(stdout, pulpie_rt_result_truncated(r));
            fputs(", \"empty_reason\": ", stdout);
            write_json_or_null(stdout, pulpie_rt_result_empty_reason(r));
            fputs(", \"encoding\": ", stdout);
            write_json_or_null(stdout, pulpie_rt_result_encoding(r));
            /* the page's metadata (ABI 7) */
            fputs(", \"title\": ", stdout);
            write_json_or_null(stdout, pulpie_rt_result_title(r));
            fputs(", \"authors\": [", stdout);
            for (uint32_t a = 0; a < pulpie_rt_result_n_authors(r); a++) {
                const char *author = pulpie_rt_result_authors(r, a);
                if (a) fputs(", ", stdout);
                write_json_string(stdout, author, strlen(author));
            }
            fputc(']', stdout);
            const char *(*const metadata[])(const pulpie_rt_result *) = {
                pulpie_rt_result_published, pulpie_rt_result_modified, pulpie_rt_result_site_name,
                pulpie_rt_result_language, pulpie_rt_result_canonical_url,
                pulpie_rt_result_description};
            const char *const metadata_names[] = {"published", "modified", "site_name", "language",
                                                  "canonical_url", "description"};
            for (size_t m = 0; m < sizeof metadata / sizeof *metadata; m++) {
                printf(", \"%s\": ", metadata_names[m]);
                write_json_or_null(stdout, metadata[m](r));
            }
            if (labels) {
                fputs(", \"labels\": {", stdout);
                uint32_t n_labels = pulpie_rt_result_n_labels(r);
                for (uint32_t l = 0; l < n_labels; l++) {
                    int is_main = 0;
                    const char *block = pulpie_rt_result_label(r, l, &is_main);
                    if (l) fputs(", ", stdout);
                    write_json_string(stdout, block, strlen(block));
                    fputs(is_main ? ": \"main\"" : ": \"other\"", stdout);
                }
                fputc('}', stdout);
            }
            fputs("}\n", stdout);
            free(pages[i].id);
        } else {
            if (error) fprintf(stderr, "extract: %s: %s\n", pages[i].id, error);
            fwrite(markdown, 1, n, stdout);
            fputc('\n', stdout);
        }
        pulpie_rt_result_free(r);
        free(pages[i].html);
    }
    free(pages);
    free(inputs);
    pulpie_rt_engine_close(w.engine);
    if (fflush(stdout) != 0) die("stdout", strerror(errno));
    return w.failed_call ? 1 : page_failed ? 2 : 0;
}
