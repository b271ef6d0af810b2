/*
 * Runs the core's C ABI over a file of pages, for memory checkers and profilers:
 *
 *   python core/tools/write_pages.py dev build/dev.pages     # u32 length + UTF-8, per page
 *   cc -O1 -g core/tools/simplify_pages.c -o build/simplify_pages \
 *      -L target/release -lpulpie_rt_core -Wl,-rpath,$PWD/target/release
 *   valgrind --leak-check=full --errors-for-leak-kinds=definite,indirect \
 *      --error-exitcode=1 build/simplify_pages build/dev.pages
 *
 * Every page goes through pulpie_rt_simplify_page, then pulpie_rt_reconstruct of its
 * map_html with every block labelled main, and every buffer is released. Exit status 1 when a
 * call fails; it prints the number of pages and output bytes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint8_t *simplified_ptr;
    size_t simplified_len;
    uint8_t *map_ptr;
    size_t map_len;
    const char *reason;
} SimplifyOutput;

typedef struct {
    uint8_t *ptr;
    size_t len;
    const char *reason;
} TextOutput;

int32_t pulpie_rt_simplify_page(const uint8_t *page, size_t len, size_t cutoff,
                                SimplifyOutput *out);
int32_t pulpie_rt_reconstruct(const uint8_t *map_html, size_t map_len, const uint8_t *main_ids,
                              size_t ids_len, TextOutput *out);
void pulpie_rt_free(uint8_t *ptr, size_t len);

/* "1\0" .. "n\0": every _item_id of a page with n blocks, each ended by a NUL */
static size_t all_ids(const uint8_t *simplified, size_t len, char **ids) {
    size_t blocks = 0, used = 0;
    const char *needle = "_item_id=\"";
    for (size_t i = 0; i + 10 <= len; i++)
        if (memcmp(simplified + i, needle, 10) == 0) blocks++;
    *ids = malloc(blocks * 12 + 1);
    for (size_t k = 1; k <= blocks; k++) used += (size_t)sprintf(*ids + used, "%zu", k) + 1;
    return used;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s PAGES_FILE\n", argv[0]);
        return 2;
    }
    FILE *fh = fopen(argv[1], "rb");
    if (fh == NULL) {
        perror(argv[1]);
        return 2;
    }
    size_t pages = 0, bytes = 0;
    uint32_t len;
    while (fread(&len, sizeof len, 1, fh) == 1) {
        uint8_t *page = malloc(len ? len : 1);
        if (fread(page, 1, len, fh) != len) {
            fprintf(stderr, "truncated pages file\n");
            return 2;
        }
        SimplifyOutput out;
        int32_t status = pulpie_rt_simplify_page(page, len, 500, &out);
        if (status != 0) {
            fprintf(stderr, "page %zu: status %d: %s\n", pages, status,
                    out.reason ? out.reason : "");
            return 1;
        }
        char *ids;
        size_t ids_len = all_ids(out.simplified_ptr, out.simplified_len, &ids);
        TextOutput main_html;
        status = pulpie_rt_reconstruct(out.map_ptr, out.map_len, (const uint8_t *)ids, ids_len,
                                       &main_html);
        if (status != 0) {
            fprintf(stderr, "page %zu: reconstruct status %d: %s\n", pages, status,
                    main_html.reason ? main_html.reason : "");
            return 1;
        }
        bytes += out.simplified_len + out.map_len + main_html.len;
        pulpie_rt_free(main_html.ptr, main_html.len);
        pulpie_rt_free(out.simplified_ptr, out.simplified_len);
        pulpie_rt_free(out.map_ptr, out.map_len);
        free(ids);
        free(page);
        pages++;
    }
    fclose(fh);
    printf("%zu pages, %zu output bytes\n", pages, bytes);
    return 0;
}
