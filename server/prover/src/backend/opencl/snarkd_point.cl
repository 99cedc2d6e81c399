// snarkd's multiexp kernels over one curve group. POINT is replaced by the group's generated
// name (ec-gpu-gen's ec.cl: POINT_affine, POINT_jacobian, POINT_add; snarkd_xyzz.cl's), FIELD by
// its coordinate field's and SCALAR by the scalar field's. They read what `snarkd_split` and the
// sort (snarkd_sort.cl) made: a listed term's base is bases[base_start + position]. An affine
// base with y = 0 is the identity (blst writes it as zeros; no point of either group has
// y = 0) and is skipped. The sums are kept in XYZZ coordinates (snarkd_xyzz.cl) and written in
// Jacobian ones.

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
  POINT_xyzz acc = POINT_snarkd_zero();
  for (uint k = gid; k < n; k += items) {
    if (ones[k] >= chunk) continue;  // only a wrong count could list one: it reads no base
    const POINT_affine b = bases[base_start + ones[k]];
    if (!FIELD_eq(b.y, zero)) acc = POINT_snarkd_add_affine(acc, b);
  }
  // The group's 127 additions are Jacobian: those points take a quarter less local memory.
  part[lid] = POINT_snarkd_jacobian(acc);
  BARRIER_LOCAL();
  for (uint span = SNARKD_GROUP_ITEMS / 2; span > 0; span >>= 1) {
    if (lid < span) part[lid] = POINT_add(part[lid], part[lid + span]);
    BARRIER_LOCAL();
  }
  if (lid == 0) sums[GET_GROUP_ID()] = part[0];
}

// Sums each bucket's bases (negated for a negative digit) over the sorted list: work item s
// takes positions [s·L, (s + 1)·L) of the list (L = ⌈pairs / items⌉), and adds while a bucket
// lasts. A run that begins its bucket goes to buckets[g]; the run a slice begins with, when its
// bucket began in an earlier slice, goes to heads[s] (the reduction adds it in). So every
// item does L additions however uneven the buckets are, and every bucket is written once
// (an empty one never: the reduction skips it).
KERNEL void POINT_snarkd_bucket_sum(GLOBAL POINT_affine* bases, uint base_start,
                                    GLOBAL uint* split_counts, uint chunk, uint max_bits,
                                    uint capacity, GLOBAL uint* starts, GLOBAL uint* sorted,
                                    GLOBAL POINT_jacobian* buckets, GLOBAL POINT_jacobian* heads) {
  const uint s = GET_GLOBAL_ID();
  const uint items = get_global_size(0);
  const snarkd_shape shape = snarkd_shape_of(split_counts, chunk, max_bits, capacity);
  const uint total = starts[shape.len];
  const uint slice = (total + items - 1) / items;
  uint pos = s * slice;
  const uint end = min(pos + slice, total);
  if (pos >= end) return;
  // The bucket holding `pos`: the last g with starts[g] <= pos (starts[0] = 0 <= pos < total =
  // starts[len]).
  uint g = 0;
  uint hi = shape.len;
  while (hi - g > 1) {
    const uint mid = g + (hi - g) / 2;
    if (starts[mid] <= pos) g = mid;
    else hi = mid;
  }
  uint next = starts[g + 1];
  uint run = pos;
  const FIELD zero = FIELD_ZERO;
  POINT_xyzz acc = POINT_snarkd_zero();
  for (; pos < end; pos++) {
    const uint pair = sorted[pos];
    const uint term = pair & 0x7fffffffu;
    // A position past the chunk (only a wrong count could list one) reads no base.
    if (term < chunk) {
      POINT_affine b = bases[base_start + term];
      if (!FIELD_eq(b.y, zero)) {
        if (pair >> 31) b.y = FIELD_sub(zero, b.y);
        acc = POINT_snarkd_add_affine(acc, b);
      }
    }
    if (pos + 1 == next || pos + 1 == end) {
      if (run == starts[g]) buckets[g] = POINT_snarkd_jacobian(acc);
      else heads[s] = POINT_snarkd_jacobian(acc);
      acc = POINT_snarkd_zero();
      run = pos + 1;
      if (pos + 1 == next && pos + 1 < end) {
        // The next bucket with pairs (empty ones start where they end).
        do g++;
        while (starts[g + 1] <= pos + 1);
        next = starts[g + 1];
      }
    }
  }
}

// Σ over each window's buckets of digit·bucket, in parts: work item (window j, part p) takes
// the window's buckets [p·per, (p + 1)·per) (P parts a window, the largest power of two with
// windows·P <= items, at most B; per = B/P), a bucket being its run plus the heads of the
// slices that begin inside it (`slice_items` slices, as POINT_snarkd_bucket_sum cut them), and
// writes T = Σ_i (i + 1)·bucket[p·per + i] and S = Σ_i bucket[p·per + i] to out[2·(j·P + p)]
// and out[2·(j·P + p) + 1]. The window's sum is Σ_p T_p + per·p·S_p, which the host forms
// (windows.rs: `Sorted::combine`).
KERNEL void POINT_snarkd_bucket_reduce(GLOBAL uint* split_counts, uint chunk, uint max_bits,
                                       uint capacity, GLOBAL uint* starts,
                                       GLOBAL POINT_jacobian* buckets,
                                       GLOBAL POINT_jacobian* heads, uint slice_items,
                                       GLOBAL POINT_jacobian* out) {
  const uint gid = GET_GLOBAL_ID();
  const uint items = get_global_size(0);
  const snarkd_shape shape = snarkd_shape_of(split_counts, chunk, max_bits, capacity);
  uint parts = 1;
  while (parts * 2 <= shape.buckets && shape.windows * parts * 2 <= items) parts *= 2;
  if (gid >= shape.windows * parts) return;
  const uint per = shape.buckets / parts;
  const uint first = (gid / parts) * shape.buckets + (gid % parts) * per;
  const uint total = starts[shape.len];
  const uint slice = (total + slice_items - 1) / slice_items;
  POINT_xyzz running = POINT_snarkd_zero();
  POINT_xyzz res = POINT_snarkd_zero();
  for (uint i = per; i-- > 0;) {
    const uint from = starts[first + i];
    const uint to = starts[first + i + 1];
    if (from < to) {
      POINT_xyzz b = POINT_snarkd_xyzz(buckets[first + i]);
      for (uint s = from / slice + 1; s * slice < to; s++)
        b = POINT_snarkd_add(b, POINT_snarkd_xyzz(heads[s]));
      running = POINT_snarkd_add(running, b);
    }
    res = POINT_snarkd_add(res, running);
  }
  out[2 * gid] = POINT_snarkd_jacobian(res);
  out[2 * gid + 1] = POINT_snarkd_jacobian(running);
}
