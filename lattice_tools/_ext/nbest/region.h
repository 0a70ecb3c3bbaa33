/* What the two files of the region search share (region_states.c: the determinized states and their
 * expansion; region_search.c: the A* rounds over them and the prefix search). */
#ifndef LATTICE_TOOLS_NBEST_REGION_H
#define LATTICE_TOOLS_NBEST_REGION_H

#include "nbest.h"

#define MASK61 ((((uint64_t)1) << 61) - 1)

static inline uint64_t subset_hash(const i64 *states, const i64 *rkeys, i64 lo, i64 hi)
{
    uint64_t h = 1469598103934665603ull & MASK61;
    for (i64 k = lo; k < hi; k++) {
        h = (h * 1000003u + (uint64_t)states[k]) & MASK61;
        h = (h * 1000003u + (uint64_t)rkeys[k]) & MASK61;
    }
    return h;
}

/* Determinized states and their choices.  Members of state j: state[off[j]:off[j + 1]] (ascending)
 * with residual costs resid and their keys rkey (rounded to the resolution); table: open addressing
 * on a hash of (states, keys), -1 = empty.  Choices of an expanded state j: ch_lo[j] .. ch_lo[j] +
 * ch_n[j] (ch_n = -1: not expanded), the end first (label -1), then in label order: the bound of all
 * completions through it, dense label, cost of the transition (of ending, for the end), successor. */
typedef struct {
    i64 nds, n_ch, table_size;
    IA off, state, rkey, table, ch_lo, ch_n, ch_lab, ch_next;
    FA resid, ch_bound, ch_cost;
} Store;

/* Expansion buffers: gathered entries (label, destination, cost), their label buckets, pairs and
 * label groups, and the label/destination tables of reduce_pairs. */
typedef struct {
    IA e_lab, e_dst, b_dst, p_dst, g_lab, g_lo, g_hi;
    FA e_v, b_v, p_val, p_tmp, g_sum, g_bound;
    i64 *lab_cnt, *lab_fill, *dslot;
    /* the epsilon closure of an expansion: its states, their marks (expansion number), log sums */
    IA cl;
    i64 *e_mark, expand_no;
    double *alpha;
} Scratch;

/* The lattice as the search reads it: per state its arcs (off[s]:off[s + 1], sorted by source), each
 * with its destination, dense word label (-1: epsilon) and cost; the exit costs. */
typedef struct {
    i64 m, num_labels;
    i64 *off; /* owned */
    const i64 *dst, *dlab;
    const double *cost, *final;
} Arcs;

/* Expand determinized state j: gather its word arcs, reduce them per (label, destination) and per
 * label, and record its choices (successors interned).  -1 with an exception set. */
int expand(i64 j, Store *st, Scratch *sc, const Arcs *g, const double *hb, double resolution);

#endif
