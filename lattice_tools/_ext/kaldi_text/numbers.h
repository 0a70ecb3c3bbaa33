/* Numbers of Kaldi text lattices (kaldi_text module): integers as the reader has always taken them
 * (inline: the tid loop calls it for every transition id) and weights as Python's float() reads them. */
#ifndef LATTICE_TOOLS_KALDI_TEXT_NUMBERS_H
#define LATTICE_TOOLS_KALDI_TEXT_NUMBERS_H

#include <stdint.h>

#define INT32_LIMIT 2147483647LL

/* integer failures */
enum { R_NOT_INT = 1, R_RANGE = 2 }; /* (0: a valid integer) */

/* A non-negative int32 in ASCII decimal ([+-]?[0-9]+, as the reader has always taken): 0 and *out, or
 * R_NOT_INT / R_RANGE. */
static inline int parse_int32(const char *p, const char *end, int64_t *out) {
    const char *q = p;
    int neg = 0;
    if (q < end && (*q == '+' || *q == '-')) {
        neg = *q == '-';
        q++;
    }
    if (q == end) return R_NOT_INT;
    int64_t v = 0;
    for (; q < end; q++) {
        unsigned d = (unsigned char)*q - '0';
        if (d > 9) return R_NOT_INT;
        if (v <= INT32_LIMIT) v = v * 10 + d; /* saturates above the limit: stays > INT32_LIMIT */
    }
    if (v > INT32_LIMIT || (neg && v != 0)) return R_RANGE;
    *out = v;
    return 0;
}

/* A weight as Python's float() reads it ([+-]? digits [. digits] [e [+-] digits], or inf, infinity,
 * nan in any case; no '_'), correctly rounded: 0 and *out, -1 if the token is not a number or is NaN
 * (the reader has always refused NaN), -2 out of memory. */
int parse_float(const char *p, const char *end, double *out);

/* Once, before parse_float: its tables and the "C" locale; -1 (Python error set) on failure. */
int numbers_init(void);

#endif
