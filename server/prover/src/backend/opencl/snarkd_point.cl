// snarkd's multiexp kernels over one curve group. POINT is replaced by the group's generated
// name (ec-gpu-gen's ec.cl: POINT_affine, POINT_jacobian, POINT_add_mixed, POINT_add), FIELD by
// its coordinate field's and SCALAR by the scalar field's. Both read the lists `snarkd_split`
// made: term k of a list is bases[base_start + list[k]]. An affine base with y = 0 is the
// identity (blst writes it as zeros; no point of either group has y = 0) and is skipped.

// Σ of the bases whose scalar is one: work item gid adds terms gid, gid + items, … with mixed
// additions, the items of a work group add their sums up in local memory, and sums[group] gets
// the group's (SNARKD_GROUP_ITEMS items a group, as the host launches it); the host adds the
// groups' sums.
KERNEL void POINT_snarkd_sum_ones(GLOBAL POINT_affine* bases, uint base_start,
                                  GLOBAL uint* ones, GLOBAL uint* counts, uint chunk,
                                  GLOBAL POINT_jacobian* sums) {
  LOCAL POINT_jacobian part[SNARKD_GROUP_ITEMS];
  const uint gid = GET_GLOBAL_ID();
  const uint lid = GET_LOCAL_ID();
  const uint items = get_global_size(0);
  const FIELD zero = FIELD_ZERO;
  const uint n = min(counts[0], chunk);
  POINT_jacobian acc = POINT_ZERO;
  for (uint k = gid; k < n; k += items) {
    const POINT_affine b = bases[base_start + ones[k]];
    if (!FIELD_eq(b.y, zero)) acc = POINT_add_mixed(acc, b);
  }
  part[lid] = acc;
  BARRIER_LOCAL();
  for (uint span = SNARKD_GROUP_ITEMS / 2; span > 0; span >>= 1) {
    if (lid < span) part[lid] = POINT_add(part[lid], part[lid + span]);
    BARRIER_LOCAL();
  }
  if (lid == 0) sums[GET_GROUP_ID()] = part[0];
}

#ifndef SNARKD_BEST_BITS
#define SNARKD_BEST_BITS
// The window, at most max_bits wide, that minimises the additions of a work item with
// per_unit terms: ⌈256/b⌉·per_unit + 2^b, the narrowest of equals (windows.rs's best_bits,
// which the host uses to combine the results).
uint snarkd_best_bits(uint per_unit, uint max_bits) {
  uint best = 1;
  ulong best_cost = 0;
  for (uint b = 1; b <= max_bits; b++) {
    const ulong cost = (ulong)((256 + b - 1) / b) * per_unit + (1ul << b);
    if (b == 1 || cost < best_cost) {
      best = b;
      best_cost = cost;
    }
  }
  return best;
}
#endif

// Bucket multiexp over the `rest` list with signed digits. The shape follows the count the
// split wrote (counts[1], never taken above the chunk's length: a wrong count reads no further
// than the lists), so the host need not read it first: the window is the one
// ⌈n / units⌉ terms a work item are worth, at most max_bits wide (the buckets are allocated
// for that), windows = ⌈256 / window_bits⌉, groups = units / windows. Work item gid takes
// window gid % windows (window 0 holds the most significant bits) of the terms of group
// gid / windows, with 2^(window_bits − 1) buckets of its own in `buckets`, and writes
// Σ_d d·bucket[d] to results[gid]; the host combines the windows. A window's digit is its bits v, less 2^w when
// its own top bit is set (that bit carries into the window above), plus the top bit of the
// window below: −2^(w−1) ≤ d ≤ 2^(w−1), so half the buckets of unsigned digits, and a negative
// digit adds the negated base (y → −y). Window 0 carries nothing out: its top bit is the
// scalar's bit 255, zero for every canonical scalar.
KERNEL void POINT_snarkd_multiexp(GLOBAL POINT_affine* bases, uint base_start,
                                  GLOBAL uint* rest, GLOBAL SCALAR* exps, GLOBAL uint* counts,
                                  uint chunk, GLOBAL POINT_jacobian* buckets,
                                  GLOBAL POINT_jacobian* results, uint units, uint max_bits) {
  const uint gid = GET_GLOBAL_ID();
  const uint n = min(counts[1], chunk);
  const uint window_bits = snarkd_best_bits(max((n + units - 1) / units, 1u), max_bits);
  const uint windows = (256 + window_bits - 1) / window_bits;
  const uint groups = max(units / windows, 1u);
  if (gid >= windows * groups) return;
  const uint bucket_len = 1u << (window_bits - 1);
  buckets += bucket_len * gid;
  const POINT_jacobian local_zero = POINT_ZERO;
  for (uint d = 0; d < bucket_len; d++) buckets[d] = local_zero;

  const uint len = (n + groups - 1) / groups;
  const uint first = len * (gid / windows);
  const uint end = min(first + len, n);
  const uint window = gid % windows;
  const uint bits = window * window_bits;
  const uint w = min(window_bits, (uint)SCALAR_BITS - bits);
  const uint below = bits + w;
  const FIELD zero = FIELD_ZERO;
  for (uint k = first; k < end; k++) {
    const SCALAR e = exps[k];
    int d = (int)SCALAR_get_bits(e, bits, w);
    if (window > 0 && (d >> (w - 1))) d -= (int)(1u << w);
    if (below < SCALAR_BITS && SCALAR_get_bit(e, below)) d += 1;
    if (d != 0) {
      POINT_affine b = bases[base_start + rest[k]];
      if (!FIELD_eq(b.y, zero)) {
        if (d < 0) {
          b.y = FIELD_sub(zero, b.y);
          d = -d;
        }
        buckets[d - 1] = POINT_add_mixed(buckets[d - 1], b);
      }
    }
  }

  POINT_jacobian running = POINT_ZERO;
  POINT_jacobian res = POINT_ZERO;
  for (int d = bucket_len - 1; d >= 0; d--) {
    running = POINT_add(running, buckets[d]);
    res = POINT_add(res, running);
  }
  results[gid] = res;
}
