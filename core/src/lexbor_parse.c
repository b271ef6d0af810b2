/* lexbor's document parse (lxb_html_document_parse's steps), linear in the page where lexbor
 * alone is quadratic on pages built for it. Called by src/lexbor.rs (ParsedPage::parse);
 * compiled by build.rs against the lexbor sources it builds, so the fields read here are
 * those of the lexbor linked in. Two changes, neither of which changes the tree of a page
 * under the bound:
 *
 * - an element keeps its start tag's first `max_attributes` attributes
 *   (PULPIE_RT_MAX_ATTRIBUTES): the tree builder checks each attribute of a new element
 *   against every one the element holds (lxb_html_tree_append_attributes walks a list), so n
 *   attributes cost n * n / 2 comparisons: 40,000 on one element, 269 KB, took 5.3 CPU
 *   seconds;
 * - the document's hashes of tag and attribute names get buckets in proportion to the page:
 *   lexbor's have 128 and never grow, so d distinct names cost d * d / 256 comparisons:
 *   200,000 attribute names, 1.5 MB, took 7.8 CPU seconds.
 */

#include "lexbor/html/html.h"

/* lxb_dom_document_init's hash size; the page bytes per bucket of the wider ones, and the
 * most buckets (a 16 MB page, the service's payload limit, gets 131,072) */
#define LEXBOR_DOCUMENT_BUCKETS 128
#define HASH_BYTES_PER_BUCKET 128
#define MAX_BUCKETS (1 << 20)

struct attribute_limit {
    lxb_html_tokenizer_token_f tree_callback;
    void *tree_ctx;
    size_t max_attributes;
};

/* The tokenizer's token callback in front of the tree builder's: a token's attribute list cut
 * after its first `max_attributes`, then the tree builder's callback. The cut attributes stay
 * in the tokenizer's memory, which lexbor frees with the parser. */
static lxb_html_token_t *
limited_token(lxb_html_tokenizer_t *tkz, lxb_html_token_t *token, void *ctx)
{
    struct attribute_limit *limit = ctx;
    size_t kept = 0;
    lxb_html_token_attr_t *attr = token->attr_first;

    while (attr != NULL) {
        kept += 1;
        if (kept == limit->max_attributes && attr->next != NULL) {
            attr->next = NULL;
            token->attr_last = attr;
            break;
        }
        attr = attr->next;
    }
    return limit->tree_callback(tkz, token, limit->tree_ctx);
}

/* `*hash` (a document's, empty) replaced by one of `buckets` buckets. */
static lxb_status_t
with_buckets(lexbor_hash_t **hash, size_t buckets, size_t struct_size)
{
    lexbor_hash_t *wider = lexbor_hash_create();
    lxb_status_t status = lexbor_hash_init(wider, buckets, struct_size);

    if (status != LXB_STATUS_OK) {
        lexbor_hash_destroy(wider, true);
        return status;
    }
    lexbor_hash_destroy(*hash, true);
    *hash = wider;
    return LXB_STATUS_OK;
}

/* `html` parsed into `document` (made by lxb_html_document_create), every element keeping at
 * most `max_attributes` (1 or more) attributes. The status is lxb_html_document_parse's. */
lxb_status_t
pulpie_rt_lexbor_parse(lxb_html_document_t *document, const lxb_char_t *html, size_t size,
                       size_t max_attributes)
{
    lxb_status_t status;
    lxb_html_parser_t *parser;
    struct attribute_limit limit = {NULL, NULL, max_attributes};

    /* the names not in lexbor's static tables: one bucket per HASH_BYTES_PER_BUCKET of the
     * page, the document's hashes still empty */
    size_t buckets = size / HASH_BYTES_PER_BUCKET;
    if (buckets > LEXBOR_DOCUMENT_BUCKETS) {
        lxb_dom_document_t *dom = &document->dom_document;
        if (buckets > MAX_BUCKETS) {
            buckets = MAX_BUCKETS;
        }
        status = with_buckets(&dom->tags, buckets, sizeof(lxb_tag_data_t));
        if (status == LXB_STATUS_OK) {
            status = with_buckets(&dom->attrs, buckets, sizeof(lxb_dom_attr_data_t));
        }
        if (status != LXB_STATUS_OK) {
            return status;
        }
    }
    status = lxb_html_document_parse_chunk_begin(document);
    if (status != LXB_STATUS_OK) {
        return status;
    }
    parser = document->dom_document.parser;
    limit.tree_callback = parser->tkz->callback_token_done;
    limit.tree_ctx = parser->tkz->callback_token_ctx;
    lxb_html_tokenizer_callback_token_done_set(parser->tkz, limited_token, &limit);

    status = lxb_html_document_parse_chunk(document, html, size);
    if (status == LXB_STATUS_OK) {
        status = lxb_html_document_parse_chunk_end(document);
    }
    /* the parser stays with the document: its callback must not point at this frame */
    lxb_html_tokenizer_callback_token_done_set(parser->tkz, limit.tree_callback, limit.tree_ctx);
    return status;
}
