/* Growable arrays and allocation (nbest.h: grow_ is the inline check for room; this file reallocates),
 * and the byte budget of one kernel call. */
#include "nbest.h"

/* What the kernel running now has allocated (bytes; a block being grown counts old and new, as realloc may
 * hold both while it copies) and its limit (-1: none); over: the last MemoryError was the budget's.
 * Kernels run one at a time, holding the GIL. */
static i64 budget_held = 0, budget_limit = -1;
static int budget_over = 0;

void budget_begin(i64 max_bytes)
{
    budget_held = 0;
    budget_limit = max_bytes < 0 ? -1 : max_bytes;
    budget_over = 0;
}

int budget_take(i64 bytes)
{
    if (budget_limit >= 0 && bytes > budget_limit - budget_held) {
        budget_over = 1;
        PyErr_SetString(PyExc_MemoryError, BUDGET_EXCEEDED);
        return -1;
    }
    budget_held += bytes;
    return 0;
}

void budget_give(i64 bytes)
{
    budget_held -= bytes;
    if (budget_held < 0)
        budget_held = 0;
}

int budget_exceeded(void)
{
    return budget_over;
}

i64 budget_held_bytes(void)
{
    return budget_held;
}

int grow_realloc(void **p, i64 *cap, i64 need, size_t size, int zero)
{
    i64 c = 2 * *cap;
    if (c < need)
        c = need;
    if (c < 16)
        c = 16;
    if (budget_limit >= 0) {
        /* near the limit grow only to what it leaves (but never below need): the budget, not the doubling,
         * decides when the search stops */
        i64 room = (budget_limit - budget_held) / (i64)size;
        if (c > room)
            c = room > need ? room : need;
        if (budget_take((i64)c * (i64)size) < 0)
            return -1;
    }
    void *q = realloc(*p, (size_t)c * size);
    if (!q) {
        if (budget_limit >= 0)
            budget_give((i64)c * (i64)size);
        PyErr_NoMemory();
        return -1;
    }
    if (budget_limit >= 0)
        budget_give(*cap * (i64)size); /* the old block is gone */
    if (zero)
        memset((char *)q + (size_t)*cap * size, 0, (size_t)(c - *cap) * size);
    *p = q;
    *cap = c;
    return 0;
}

void *alloc_(size_t count, size_t size)
{
    if (budget_take((i64)(count * size)) < 0)
        return NULL;
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
