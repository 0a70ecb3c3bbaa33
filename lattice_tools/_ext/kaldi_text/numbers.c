/* Weights of Kaldi text lattices, converted correctly rounded and independently of the user's
 * locale: exact 128-bit integer arithmetic for up to 19 significant digits and small exponents (nearly
 * every weight), strtod_l in the "C" locale otherwise (see numbers.h). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__APPLE__)
#include <xlocale.h>
#endif

#include "numbers.h"

#ifdef _WIN32
typedef _locale_t c_locale_type;
#define STRTOD_L _strtod_l
#else
typedef locale_t c_locale_type;
#define STRTOD_L strtod_l
#endif

static c_locale_type c_locale;

static inline int lower(unsigned char c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

static int equals_nocase(const char *p, const char *end, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(end - p) != n) return 0;
    for (size_t i = 0; i < n; i++)
        if (lower((unsigned char)p[i]) != word[i]) return 0;
    return 1;
}

#ifdef __SIZEOF_INT128__
__extension__ typedef unsigned __int128 u128;

static int bit_length(u128 v) {
    uint64_t hi = (uint64_t)(v >> 64);
    if (hi) return 128 - __builtin_clzll(hi);
    uint64_t lo = (uint64_t)v;
    return lo ? 64 - __builtin_clzll(lo) : 0;
}

/* (v + a fraction that is non-zero iff sticky) * 2^e2, rounded to nearest-even; v has >= 55 bits (so
 * the dropped bits decide the rounding) and the result is a normal double (the caller checks). */
static double round_to_double(u128 v, int sticky, int e2) {
    int shift = bit_length(v) - 53;
    u128 top = v >> shift;
    u128 rest = v & ((((u128)1) << shift) - 1);
    u128 half = ((u128)1) << (shift - 1);
    if (rest > half || (rest == half && (sticky || (top & 1)))) top++;
    return ldexp((double)(uint64_t)top, e2 + shift);
}

static uint64_t POW10[20]; /* filled when the module is loaded */

/* m * 10^e exactly rounded, for m < 10^19 and -27 <= e <= 19; 0 and *out, or -1 (use strtod). */
static int exact_decimal(uint64_t m, int e, double *out) {
    if (m == 0) {
        *out = 0.0;
        return 0;
    }
    if (e >= 0) {
        if (e > 19) return -1;
        u128 v = (u128)m * POW10[e];
        if (bit_length(v) <= 53) {
            *out = (double)(uint64_t)v;
            return 0;
        }
        int sh = bit_length(v) < 55 ? 55 - bit_length(v) : 0;
        *out = round_to_double(v << sh, 0, -sh);
        return 0;
    }
    if (e < -27) return -1;
    int k = -e;
    uint64_t five = 1;
    for (int i = 0; i < k; i++) five *= 5; /* 5^27 < 2^63 */
    /* m / 10^k = (m * 2^s / 5^k) * 2^(-s-k); choose s so that the quotient has >= 56 bits */
    int s = 56 + bit_length(five) - bit_length(m);
    if (s < 0) s = 0;
    u128 num = ((u128)m) << s;
    u128 q = num / five;
    int sticky = (num % five) != 0;
    *out = round_to_double(q, sticky, -s - k);
    return 0;
}
#endif

/* A weight as Python's float() reads it ([+-]? digits [. digits] [e [+-] digits], or inf, infinity,
 * nan in any case; no '_'), correctly rounded: 0 and *out, or -1 if the token is not a number or
 * is NaN (the reader has always refused NaN). */
int parse_float(const char *p, const char *end, double *out) {
    const char *q = p;
    int neg = 0;
    if (q < end && (*q == '+' || *q == '-')) {
        neg = *q == '-';
        q++;
    }
    if (q < end && !(*q >= '0' && *q <= '9') && *q != '.') {
        if (equals_nocase(q, end, "inf") || equals_nocase(q, end, "infinity")) {
            *out = neg ? -INFINITY : INFINITY;
            return 0;
        }
        return -1; /* nan, or not a number */
    }
    uint64_t m = 0;
    int digits = 0, dropped = 0, seen_digit = 0;
    long long exp10 = 0;
    for (; q < end && *q >= '0' && *q <= '9'; q++) {
        seen_digit = 1;
        if (m == 0 && *q == '0') continue;
        if (digits < 19) {
            m = m * 10 + (uint64_t)(*q - '0');
            digits++;
        } else {
            dropped = dropped || *q != '0';
            exp10++;
        }
    }
    if (q < end && *q == '.') {
        q++;
        for (; q < end && *q >= '0' && *q <= '9'; q++) {
            seen_digit = 1;
            if (m == 0 && *q == '0') {
                exp10--;
                continue;
            }
            if (digits < 19) {
                m = m * 10 + (uint64_t)(*q - '0');
                digits++;
                exp10--;
            } else {
                dropped = dropped || *q != '0';
            }
        }
    }
    if (!seen_digit) return -1;
    if (q < end && (*q == 'e' || *q == 'E')) {
        q++;
        int eneg = 0;
        if (q < end && (*q == '+' || *q == '-')) {
            eneg = *q == '-';
            q++;
        }
        if (q == end) return -1;
        long ev = 0;
        for (; q < end && *q >= '0' && *q <= '9'; q++)
            if (ev < 100000) ev = ev * 10 + (*q - '0');
        if (q != end) return -1;
        exp10 += eneg ? -ev : ev;
    } else if (q != end) {
        return -1;
    }
    double v;
#ifdef __SIZEOF_INT128__
    if (!dropped && exp10 >= -27 && exp10 <= 19 && exact_decimal(m, (int)exp10, &v) == 0) {
        *out = neg ? -v : v;
        return 0;
    }
#endif
    /* long mantissas and large exponents: the C library's correctly rounded conversion, "C" locale */
    char small[64];
    size_t n = (size_t)(end - p);
    char *buf = n < sizeof small ? small : malloc(n + 1);
    if (!buf) return -2;
    memcpy(buf, p, n);
    buf[n] = 0;
    char *stop;
    v = STRTOD_L(buf, &stop, c_locale);
    int ok = stop == buf + n;
    if (buf != small) free(buf);
    if (!ok) return -1;
    *out = v;
    return 0;
}

int numbers_init(void) {
    POW10[0] = 1;
    for (int i = 1; i < 20; i++) POW10[i] = POW10[i - 1] * 10;
#ifdef _WIN32
    c_locale = _create_locale(LC_ALL, "C");
#else
    c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
#endif
    if (!c_locale) {
        PyErr_SetString(PyExc_OSError, "cannot create the \"C\" locale for reading numbers");
        return -1;
    }
    return 0;
}
