/* One pass over the bytes of a CTM file for the columnar reader (lattice_tools/scoring/ctm_columns.py):
 * lines split into tokens, data lines told from comment lines, file/channel pairs and words interned
 * (exact byte comparison; ids in order of first appearance), times, durations and confidences parsed.
 *
 * It reads only what it reads exactly and returns None for anything else, and the numpy reader of
 * ctm_columns (which hands what it does not read exactly to the line-by-line reader) decides then:
 * a byte >= 0x80 (non-ASCII text), a control byte other than tab, newline and the CR of a CRLF, a token
 * longer than 255 bytes or a line longer than 64 KB, a data line without 5 or 6 tokens, a number that is
 * not '*' or [-]digits[.digits] of at most 8 characters, a confidence '*'.  A number is the integer of
 * its digits divided by a power of ten: both exact doubles, so the quotient is the correctly rounded
 * value float() gives (as ctm_numbers.parse_numbers).
 *
 * scan(data, n_bytes) -> None or (lines, comments, fc_id, fc_pairs, word_id, vocab, start, dur, conf)
 *   data: bytes-like (uint8 items, C-contiguous; buffers.h) of at least n_bytes bytes, byte n_bytes - 1 a
 *         newline (or n_bytes == 0)
 *   lines, comments: bytes of int64, the 0-based numbers of the data lines and of the comment lines
 *                    (first token starting with ";;"); blank lines are neither
 *   fc_id, word_id: bytes of int32 per data line, indexes into fc_pairs (a list of (file, channel) str
 *                   tuples) and vocab (a list of str)
 *   start, dur, conf: bytes of float64 per data line (NaN for '*'; conf NaN on lines of 5 tokens)
 * The returned bytes objects are the kernel's own (viewed with numpy.frombuffer: read-only); the data
 * buffer is held only during the call.
 */
#include "buffers.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TOKEN 255
#define MAX_LINE 65536

/* An interned key: one token (a word) or two (a file and its channel), pointing into the data buffer. */
typedef struct {
    const unsigned char *p1, *p2;
    uint32_t len1, len2;
    int32_t id; /* -1: empty slot */
} Slot;

typedef struct {
    Slot *slots;
    size_t mask; /* size - 1, size a power of two */
    int32_t n;
} Table;

static int table_init(Table *t, size_t size)
{
    t->slots = malloc(size * sizeof(Slot));
    if (!t->slots)
        return -1;
    for (size_t k = 0; k < size; k++)
        t->slots[k].id = -1;
    t->mask = size - 1;
    t->n = 0;
    return 0;
}

/* 8 bytes at a time (memcpy: unaligned reads), then the tail byte by byte */
static inline uint64_t hash_bytes(uint64_t h, const unsigned char *p, uint32_t len)
{
    uint32_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
        h ^= h >> 32;
    }
    for (; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

/* a == b over len bytes (tokens are short: inline, instead of a call to memcmp) */
static inline int same_bytes(const unsigned char *a, const unsigned char *b, uint32_t len)
{
    uint32_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t x, y;
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y)
            return 0;
    }
    for (; i < len; i++)
        if (a[i] != b[i])
            return 0;
    return 1;
}

static uint64_t hash_key(const unsigned char *p1, uint32_t len1, const unsigned char *p2, uint32_t len2)
{
    uint64_t h = hash_bytes(0xcbf29ce484222325ULL ^ ((uint64_t)len1 << 32 | len2), p1, len1);
    h = hash_bytes(h, p2, len2);
    h ^= h >> 29;
    h *= 0xC2B2AE3D27D4EB4FULL;
    return h ^ (h >> 32);
}

static int table_grow(Table *t)
{
    Table bigger;
    if (table_init(&bigger, (t->mask + 1) * 2) < 0)
        return -1;
    for (size_t k = 0; k <= t->mask; k++) {
        Slot *s = &t->slots[k];
        if (s->id < 0)
            continue;
        size_t j = (size_t)hash_key(s->p1, s->len1, s->p2, s->len2) & bigger.mask;
        while (bigger.slots[j].id >= 0)
            j = (j + 1) & bigger.mask;
        bigger.slots[j] = *s;
    }
    free(t->slots);
    bigger.n = t->n;
    *t = bigger;
    return 0;
}

/* id of the key (ids in order of first appearance); -1 when out of memory */
static int32_t table_intern(Table *t, const unsigned char *p1, uint32_t len1, const unsigned char *p2, uint32_t len2)
{
    if ((size_t)(t->n + 1) * 2 > t->mask + 1 && table_grow(t) < 0) /* at most half full */
        return -1;
    size_t i = (size_t)hash_key(p1, len1, p2, len2) & t->mask;
    for (;; i = (i + 1) & t->mask) {
        Slot *s = &t->slots[i];
        if (s->id < 0)
            break;
        if (s->len1 == len1 && s->len2 == len2 && same_bytes(s->p1, p1, len1) && same_bytes(s->p2, p2, len2))
            return s->id;
    }
    Slot *s = &t->slots[i];
    s->p1 = p1;
    s->len1 = len1;
    s->p2 = p2;
    s->len2 = len2;
    s->id = t->n;
    return t->n++;
}

/* list of the keys' texts by id: str for one token, (str, str) for two; NULL with an error set */
static PyObject *table_texts(const Table *t, int pairs)
{
    PyObject *list = PyList_New(t->n);
    if (!list)
        return NULL;
    for (size_t k = 0; k <= t->mask; k++) {
        const Slot *s = &t->slots[k];
        if (s->id < 0)
            continue;
        PyObject *text;
        if (pairs)
            text = Py_BuildValue("(NN)", PyUnicode_DecodeASCII((const char *)s->p1, s->len1, NULL),
                                 PyUnicode_DecodeASCII((const char *)s->p2, s->len2, NULL));
        else
            text = PyUnicode_DecodeASCII((const char *)s->p1, s->len1, NULL);
        if (!text) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, s->id, text);
    }
    return list;
}

static const double POW10[8] = {1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6, 1e7};

/* 0 with *out set, -1 when the token is not '*' or [-]digits[.digits] of at most 8 characters */
static int parse_number(const unsigned char *p, uint32_t len, double *out)
{
    if (len == 1 && p[0] == '*') {
        *out = NAN;
        return 0;
    }
    if (len < 1 || len > 8)
        return -1;
    uint32_t neg = p[0] == '-', i = neg, n_int = 0, n_frac = 0;
    uint64_t m = 0;
    for (; i < len && p[i] >= '0' && p[i] <= '9'; i++, n_int++)
        m = m * 10 + (uint64_t)(p[i] - '0');
    if (n_int == 0)
        return -1;
    if (i < len) {
        if (p[i] != '.')
            return -1;
        for (i++; i < len && p[i] >= '0' && p[i] <= '9'; i++, n_frac++)
            m = m * 10 + (uint64_t)(p[i] - '0');
        if (n_frac == 0 || i < len)
            return -1;
    }
    double v = (double)m / POW10[n_frac];
    *out = neg ? -v : v;
    return 0;
}

typedef struct {
    int64_t *lines, *comments;
    int32_t *fc, *word;
    double *start, *dur, *conf;
    size_t n_data, n_comments, comments_cap;
    Table pairs, vocab;
    int32_t last_pair; /* the pair of the last data line (-1: none yet) and its tokens */
    const unsigned char *last_tok[2];
    uint32_t last_len[2];
} Scan;

/* 1: read; 0: not for this reader (None); -1: out of memory.  Runs without the GIL. */
static int scan_lines(Scan *sc, const unsigned char *buf, size_t n_bytes)
{
    const unsigned char *p = buf, *end = buf + n_bytes;
    int64_t line_no = 0;
    for (; p < end; line_no++) {
        /* tokens up to the line's '\n' (the data end with one); bytes > 32 and < 128 are token bytes */
        const unsigned char *tok[6];
        uint32_t tlen[6];
        int nt = 0;
        const unsigned char *q = p;
        for (;;) {
            unsigned char b = *q;
            if (b == '\n')
                break;
            if (b == ' ' || b == '\t' || (b == '\r' && q[1] == '\n')) { /* CR only in CRLF */
                q++;
                continue;
            }
            if (b <= 32 || b >= 128) /* control bytes, non-ASCII: the numpy reader decides */
                return 0;
            const unsigned char *t = q;
            while (*q > 32 && *q < 128)
                q++;
            if (q - t > MAX_TOKEN)
                return 0;
            if (nt == 6) {
                if (!(tlen[0] >= 2 && tok[0][0] == ';' && tok[0][1] == ';'))
                    return 0;
                continue; /* a comment line: its tokens are not needed */
            }
            tok[nt] = t;
            tlen[nt++] = (uint32_t)(q - t);
        }
        if (q - p > MAX_LINE)
            return 0;
        p = q + 1;
        if (nt == 0)
            continue; /* blank line */
        if (tlen[0] >= 2 && tok[0][0] == ';' && tok[0][1] == ';') {
            if (sc->n_comments == sc->comments_cap) {
                size_t cap = sc->comments_cap ? 2 * sc->comments_cap : 64;
                int64_t *grown = realloc(sc->comments, cap * sizeof(int64_t));
                if (!grown)
                    return -1;
                sc->comments = grown;
                sc->comments_cap = cap;
            }
            sc->comments[sc->n_comments++] = line_no;
            continue;
        }
        if (nt != 5 && nt != 6)
            return 0;
        size_t k = sc->n_data;
        double c = NAN;
        if (parse_number(tok[2], tlen[2], &sc->start[k]) < 0 || parse_number(tok[3], tlen[3], &sc->dur[k]) < 0)
            return 0;
        if (nt == 6 && (parse_number(tok[5], tlen[5], &c) < 0 || isnan(c)))
            return 0;
        /* the file and channel of the line before, most of the time: no lookup */
        int32_t pair = sc->last_pair;
        if (pair < 0 || tlen[0] != sc->last_len[0] || tlen[1] != sc->last_len[1]
            || !same_bytes(tok[0], sc->last_tok[0], tlen[0]) || !same_bytes(tok[1], sc->last_tok[1], tlen[1])) {
            pair = table_intern(&sc->pairs, tok[0], tlen[0], tok[1], tlen[1]);
            sc->last_pair = pair;
            for (int j = 0; j < 2; j++) {
                sc->last_tok[j] = tok[j];
                sc->last_len[j] = tlen[j];
            }
        }
        int32_t w = table_intern(&sc->vocab, tok[4], tlen[4], NULL, 0);
        if (pair < 0 || w < 0)
            return -1;
        sc->conf[k] = c;
        sc->lines[k] = line_no;
        sc->fc[k] = pair;
        sc->word[k] = w;
        sc->n_data++;
    }
    return 1;
}

static PyObject *cut(PyObject **bytes, size_t len)
{
    PyObject *b = *bytes;
    *bytes = NULL;
    if (_PyBytes_Resize(&b, (Py_ssize_t)len) < 0)
        return NULL;
    return b;
}

static PyObject *scan(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer view = {0};
    PyObject *data;
    Py_ssize_t n_bytes;
    if (!PyArg_ParseTuple(args, "On:scan", &data, &n_bytes)
        || buffer_get(&view, data, "scan", "data", 'B', BUF_FLAT, -1) < 0)
        return NULL;
    const unsigned char *buf = view.buf;
    if (n_bytes < 0 || n_bytes > view.len || (n_bytes > 0 && buf[n_bytes - 1] != '\n')) {
        buffer_release(&view);
        return PyErr_Format(PyExc_ValueError, "scan: argument n_bytes must be at most the length of data, with "
                            "byte n_bytes - 1 a newline (got %zd of %zd bytes)", n_bytes, view.len);
    }
    size_t n_lines = 0;
    for (const unsigned char *q = buf, *end = buf + n_bytes; (q = memchr(q, '\n', (size_t)(end - q))); q++)
        n_lines++;
    size_t cap = n_lines ? n_lines : 1;
    /* the columns are written into bytes objects of the largest size (one item per line), cut at the end */
    enum { LINES, FC, WORD, START, DUR, CONF, N_COLUMNS };
    static const size_t item[N_COLUMNS] = {8, 4, 4, 8, 8, 8};
    PyObject *col[N_COLUMNS] = {0}, *result = NULL;
    Scan sc = {0};
    sc.last_pair = -1;
    int got = -1;
    for (int k = 0; k < N_COLUMNS; k++)
        if (!(col[k] = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(cap * item[k]))))
            goto done;
    if (table_init(&sc.pairs, 64) < 0 || table_init(&sc.vocab, 4096) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    sc.lines = (int64_t *)PyBytes_AS_STRING(col[LINES]);
    sc.fc = (int32_t *)PyBytes_AS_STRING(col[FC]);
    sc.word = (int32_t *)PyBytes_AS_STRING(col[WORD]);
    sc.start = (double *)PyBytes_AS_STRING(col[START]);
    sc.dur = (double *)PyBytes_AS_STRING(col[DUR]);
    sc.conf = (double *)PyBytes_AS_STRING(col[CONF]);
    Py_BEGIN_ALLOW_THREADS
    got = scan_lines(&sc, buf, (size_t)n_bytes);
    Py_END_ALLOW_THREADS
    if (got < 0) {
        PyErr_NoMemory();
        goto done;
    }
    if (got == 0) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    {
        PyObject *comments = PyBytes_FromStringAndSize((const char *)sc.comments,
                                                       (Py_ssize_t)(sc.n_comments * sizeof(int64_t)));
        PyObject *pairs = table_texts(&sc.pairs, 1), *vocab = table_texts(&sc.vocab, 0);
        PyObject *c[N_COLUMNS] = {0};
        int failed = !comments || !pairs || !vocab;
        for (int k = 0; k < N_COLUMNS; k++)
            if (!(c[k] = cut(&col[k], sc.n_data * item[k])))
                failed = 1;
        if (!failed)
            result = PyTuple_Pack(9, c[LINES], comments, c[FC], pairs, c[WORD], vocab, c[START], c[DUR], c[CONF]);
        Py_XDECREF(comments);
        Py_XDECREF(pairs);
        Py_XDECREF(vocab);
        for (int k = 0; k < N_COLUMNS; k++)
            Py_XDECREF(c[k]);
    }
done:
    for (int k = 0; k < N_COLUMNS; k++)
        Py_XDECREF(col[k]);
    free(sc.comments);
    free(sc.pairs.slots);
    free(sc.vocab.slots);
    buffer_release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(data, n_bytes) -> None or (lines, comments, fc_id, fc_pairs, word_id, vocab, start, dur, conf)\n\n"
     "The CTM lines of data[:n_bytes] (a bytes-like object; byte n_bytes - 1 a newline) as columns: bytes of\n"
     "int64 data line numbers and comment line numbers (0-based), bytes of int32 (file, channel) pair id and\n"
     "word id per data line with the lists of pairs and words (ids in order of first appearance), bytes of\n"
     "float64 start, duration and confidence per data line (NaN: '*' or no confidence).  None when the file\n"
     "holds anything this reader does not read exactly (see the module's documentation)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "ctm_scan",
                                    "One pass over a CTM file's bytes for the columnar CTM reader.", -1, methods};

PyMODINIT_FUNC PyInit_ctm_scan(void)
{
    return PyModule_Create(&module);
}
