/* Growable arrays and allocation (nbest.h: grow_ is the inline check for room; this file reallocates). */
#include "nbest.h"

int grow_realloc(void **p, i64 *cap, i64 need, size_t size, int zero)
{
    i64 c = 2 * *cap;
    if (c < need)
        c = need;
    if (c < 16)
        c = 16;
    void *q = realloc(*p, (size_t)c * size);
    if (!q) {
        PyErr_NoMemory();
        return -1;
    }
    if (zero)
        memset((char *)q + (size_t)*cap * size, 0, (size_t)(c - *cap) * size);
    *p = q;
    *cap = c;
    return 0;
}

void *alloc_(size_t count, size_t size)
{
    void *p = malloc(count ? count * size : 1);
    if (!p)
        PyErr_NoMemory();
    return p;
}

int cmp_i64(const void *a, const void *b)
{
    i64 x = *(const i64 *)a, y = *(const i64 *)b;
    return (x > y) - (x < y);
}
