/* The one parse of a binary CompactLattice body (OpenFst "vector" FST of arc type compactlattice44 or
 * compactlattice84, the bytes after the FST header), for every module that reads one: kaldi_binary.c (the
 * arrays of lattice_tools.io.lattices.kaldi's RawFst) and kaldi_order.c (Kaldi's best path straight from the
 * archive's bytes).  Per state: its final weight (two float32 or float64), its final transition-id string
 * (int32 length, int32 ids), its arc count (int64), then per arc ilabel, olabel (int32), weight (two floats),
 * string (int32 length, int32 ids), next state (int32), all little-endian.
 *
 * The buffer may end before the FST does (the reader streams): the parse then reports where it stopped, and
 * the caller reads more and parses again, or reports the truncation with the position and what was being
 * read.  Lengths are checked as the reader in Python checked them (a string of 0 .. 2^24 - 1 ids, an arc
 * count of 0 .. 2^31 - 1); arrays grow as the parse goes, so a corrupt count fails at the end of the input,
 * not in malloc.  The transition ids themselves are copied only when asked for (keep_ids): the best path
 * needs only each string's length (the frames an arc spans).
 *
 * Static functions only (setup.py lists every header of _ext/ as a dependency of every module).
 */
#ifndef LATTICE_TOOLS_EXT_KALDI_COMPACT_BODY_H
#define LATTICE_TOOLS_EXT_KALDI_COMPACT_BODY_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* what compact_parse returns */
enum { BODY_OK = 0, BODY_SHORT = 1, BODY_CORRUPT = 2, BODY_NOMEM = 3, BODY_TOO_BIG = 4 };
/* what a BODY_SHORT parse was reading */
enum { BODY_AT_FINAL_WEIGHT = 0, BODY_AT_FINAL_STRING = 1, BODY_AT_ARC_COUNT = 2, BODY_AT_ARC = 3 };
/* what a BODY_CORRUPT parse found */
enum { BODY_BAD_FINAL_STRING = 0, BODY_BAD_ARC_COUNT = 1, BODY_BAD_ARC_STRING = 2 };

typedef struct {
    char *data;
    size_t len, cap, item;
} Vec;

static inline int vec_push(Vec *v, const void *x)
{
    if (v->len == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 256;
        char *p = realloc(v->data, cap * v->item);
        if (!p)
            return -1;
        v->data = p, v->cap = cap;
    }
    memcpy(v->data + v->len * v->item, x, v->item);
    v->len++;
    return 0;
}

static inline void vec_free(Vec *v)
{
    free(v->data);
    v->data = NULL;
    v->len = v->cap = 0;
}

/* The body as arrays: per state final_w1, final_w2 (float64; inf, inf when not final -- the string of a state
 * that is not final is skipped) and final_len (int64: its string's length, 0 when not final); per arc src, dst,
 * ilabel, olabel (int64), w1, w2 (float64); tid_offsets (int64, one more than the arcs: arc i's string is
 * tids[tid_offsets[i] .. tid_offsets[i + 1]), counted even when the ids are not kept); with keep_ids the ids
 * (int32) of the arcs' strings in tids and of the final states' strings, one after the other in state order, in
 * final_tids. */
typedef struct {
    Vec final_w1, final_w2, final_len, src, dst, ilabel, olabel, w1, w2, tid_offsets, tids, final_tids;
    int64_t n_tids;
} CompactBody;

static inline void compact_body_init(CompactBody *b)
{
    memset(b, 0, sizeof *b);
    b->final_w1.item = b->final_w2.item = b->final_len.item = b->src.item = b->dst.item = 8;
    b->ilabel.item = b->olabel.item = b->w1.item = b->w2.item = b->tid_offsets.item = 8;
    b->tids.item = b->final_tids.item = 4;
}

static inline void compact_body_free(CompactBody *b)
{
    vec_free(&b->final_w1), vec_free(&b->final_w2), vec_free(&b->final_len), vec_free(&b->src);
    vec_free(&b->dst), vec_free(&b->ilabel), vec_free(&b->olabel), vec_free(&b->w1), vec_free(&b->w2);
    vec_free(&b->tid_offsets), vec_free(&b->tids), vec_free(&b->final_tids);
}

/* Where a parse stopped: BODY_SHORT -- `state`, `what` (BODY_AT_*), `at` (the offset from the start of the
 * body where that read starts); BODY_CORRUPT -- `state`, `what` (BODY_BAD_*), `value` (the length read);
 * BODY_OK -- `consumed` bytes. */
typedef struct {
    long long state, value;
    int what;
    Py_ssize_t at, consumed;
} BodyStop;

static inline int32_t body_i32(const unsigned char *p)
{
    uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    int32_t x;
    memcpy(&x, &u, 4);
    return x;
}

static inline int64_t body_i64(const unsigned char *p)
{
    uint64_t u = 0;
    for (int i = 7; i >= 0; i--)
        u = u << 8 | p[i];
    int64_t x;
    memcpy(&x, &u, 8);
    return x;
}

static inline double body_real(const unsigned char *p, int fsize)
{
    if (fsize == 4) {
        uint32_t u = (uint32_t)body_i32(p);
        float f;
        memcpy(&f, &u, 4);
        return (double)f;
    }
    uint64_t u = (uint64_t)body_i64(p);
    double d;
    memcpy(&d, &u, 8);
    return d;
}

/* Parses num_states states from base[0 .. end - base) into b (compact_body_init'ed); fsize 4 or 8.  max_items
 * >= 0: BODY_TOO_BIG as soon as the states and arcs read exceed it (a caller's memory budget). */
static int compact_parse(const unsigned char *base, const unsigned char *end, long long num_states, int fsize,
                         int keep_ids, long long max_items, CompactBody *b, BodyStop *stop)
{
    const unsigned char *p = base;
    int64_t zero = 0;
    b->n_tids = 0;
    if (vec_push(&b->tid_offsets, &zero) < 0)
        return BODY_NOMEM;
#define NEED(n, code)                                                                                               \
    if ((size_t)(end - p) < (size_t)(n)) {                                                                          \
        stop->state = s, stop->what = (code), stop->at = (Py_ssize_t)(at - base);                                   \
        return BODY_SHORT;                                                                                          \
    }
#define CORRUPT(code, v)                                                                                            \
    {                                                                                                               \
        stop->state = s, stop->what = (code), stop->value = (long long)(v);                                         \
        return BODY_CORRUPT;                                                                                        \
    }
    for (long long s = 0; s < num_states; s++) {
        const unsigned char *at = p;
        if (max_items >= 0 && s + (long long)b->src.len > max_items)
            return BODY_TOO_BIG;
        NEED(2 * fsize, BODY_AT_FINAL_WEIGHT)
        double fa = body_real(p, fsize), fb = body_real(p + fsize, fsize);
        p += 2 * fsize;
        at = p;
        NEED(4, BODY_AT_FINAL_STRING)
        int32_t n = body_i32(p);
        p += 4;
        if (n < 0 || n >= 1 << 24)
            CORRUPT(BODY_BAD_FINAL_STRING, n)
        at = p;
        NEED(4 * (size_t)n, BODY_AT_FINAL_STRING)
        const unsigned char *final_ids = p;
        p += 4 * (size_t)n;
        int64_t flen = 0;
        if (!isinf(fa)) {
            flen = n;
            if (keep_ids)
                for (int32_t i = 0; i < n; i++) {
                    int32_t t = body_i32(final_ids + 4 * (size_t)i);
                    if (vec_push(&b->final_tids, &t) < 0)
                        return BODY_NOMEM;
                }
        } else {
            fa = fb = INFINITY;
        }
        if (vec_push(&b->final_w1, &fa) < 0 || vec_push(&b->final_w2, &fb) < 0 || vec_push(&b->final_len, &flen) < 0)
            return BODY_NOMEM;
        at = p;
        NEED(8, BODY_AT_ARC_COUNT)
        int64_t narcs = body_i64(p);
        p += 8;
        if (narcs < 0 || narcs >= (int64_t)1 << 31)
            CORRUPT(BODY_BAD_ARC_COUNT, narcs)
        if (max_items >= 0 && s + (long long)b->src.len + narcs > max_items)
            return BODY_TOO_BIG;
        for (int64_t a = 0; a < narcs; a++) {
            at = p;
            size_t head = 12 + 2 * (size_t)fsize;
            NEED(head, BODY_AT_ARC)
            int64_t ilabel = body_i32(p), olabel = body_i32(p + 4);
            double g = body_real(p + 8, fsize), ac = body_real(p + 8 + fsize, fsize);
            int32_t len = body_i32(p + 8 + 2 * fsize);
            p += head;
            if (len < 0 || len >= 1 << 24)
                CORRUPT(BODY_BAD_ARC_STRING, len)
            at = p;
            NEED(4 * (size_t)len, BODY_AT_ARC)
            const unsigned char *ids = p;
            p += 4 * (size_t)len;
            at = p;
            NEED(4, BODY_AT_ARC)
            int64_t ns = body_i32(p);
            p += 4;
            int64_t from = s;
            if (keep_ids)
                for (int32_t i = 0; i < len; i++) {
                    int32_t t = body_i32(ids + 4 * (size_t)i);
                    if (vec_push(&b->tids, &t) < 0)
                        return BODY_NOMEM;
                }
            b->n_tids += len;
            if (vec_push(&b->src, &from) < 0 || vec_push(&b->dst, &ns) < 0 || vec_push(&b->ilabel, &ilabel) < 0 ||
                vec_push(&b->olabel, &olabel) < 0 || vec_push(&b->w1, &g) < 0 || vec_push(&b->w2, &ac) < 0 ||
                vec_push(&b->tid_offsets, &b->n_tids) < 0)
                return BODY_NOMEM;
        }
    }
#undef NEED
#undef CORRUPT
    stop->consumed = (Py_ssize_t)(p - base);
    return BODY_OK;
}

#endif
