// snarkd's counting sort of a multiexp chunk's signed digits by (window, digit), over the scalar
// field (SCALAR is replaced by its generated name). The `rest` list of `snarkd_split` (term
// positions, and their canonical scalars in `exps`) is cut into windows of `bits` bits, window
// 0 holding the most significant; each nonzero digit d of window j belongs to bucket
// g = j·B + |d| − 1 (B = 2^(bits−1) buckets a window: signed digits). The sort lists every
// (term, window) pair with a nonzero digit, bucket by bucket: `sorted` holds the term's
// position with the digit's sign in bit 31, and `starts[g]` where bucket g's run begins
// (`starts[G]` is the number of pairs). The point kernels (snarkd_point.cl) then sum each
// bucket's bases with one work item a slice of the list, however uneven the buckets are.
//
// Every kernel here and there reads the shape from the split's count on the device (the host
// never waits for it): `split_counts[1]` terms (never taken above `chunk`), the window
// `snarkd_sorted_bits`, with `max_bits` and `capacity` (the room of `sorted`) from the host.

// Windows of `bits` bits that cover a scalar's 256 bits.
uint snarkd_windows(uint bits) { return (256 + bits - 1) / bits; }

// The window for n terms: the one, at most max_bits wide, that minimises the additions
// n·⌈256/b⌉ (a term's digits) + ⌈256/b⌉·2^b (summing each window's 2^(b−1) buckets twice), the
// narrowest of equals; widened while its pairs would overflow `capacity`. windows.rs's
// `sorted_bits` is the same function: the host uses it to combine the windows.
uint snarkd_sorted_bits(uint n, uint max_bits, uint capacity) {
  uint best = 1;
  ulong best_cost = 0;
  for (uint b = 1; b <= max_bits; b++) {
    const ulong w = snarkd_windows(b);
    const ulong cost = w * n + (w << b);
    if (b == 1 || cost < best_cost) {
      best = b;
      best_cost = cost;
    }
  }
  while (best < max_bits && (ulong)n * snarkd_windows(best) > capacity) best++;
  return best;
}

// The chunk's terms and window, as every kernel of the sort reads them.
typedef struct {
  uint n;
  uint bits;
  uint windows;
  uint buckets;  // a window's
  uint len;      // all windows' buckets
} snarkd_shape;

snarkd_shape snarkd_shape_of(GLOBAL uint* split_counts, uint chunk, uint max_bits,
                             uint capacity) {
  snarkd_shape s;
  s.n = min(split_counts[1], chunk);
  s.bits = snarkd_sorted_bits(s.n, max_bits, capacity);
  s.windows = snarkd_windows(s.bits);
  s.buckets = 1u << (s.bits - 1);
  s.len = s.windows * s.buckets;
  return s;
}

// Bits [skip, skip + w) of e counted from its most significant bit (w <= 32), read from the
// one or two limbs that hold them (ec-gpu-gen's SCALAR_get_bits reads them a bit at a time).
uint snarkd_bits(SCALAR e, uint skip, uint w) {
  const uint low = 256u - skip - w;
  const uint i = low / SCALAR_LIMB_BITS;
  const uint shift = low % SCALAR_LIMB_BITS;
  ulong v = (ulong)e.val[i] >> shift;
  if (shift + w > SCALAR_LIMB_BITS && i + 1 < SCALAR_LIMBS) {
    v |= (ulong)e.val[i + 1] << (SCALAR_LIMB_BITS - shift);
  }
  return (uint)(v & ((1ul << w) - 1));
}

// The signed digit of window j of canonical scalar e: the window's bits v, less 2^w when its
// top bit is set (that bit carries into the window above), plus the top bit of the window
// below; so −2^(w−1) ≤ d ≤ 2^(w−1). Window 0 carries nothing out: its top bit is the scalar's
// bit 255, zero for every canonical scalar.
int snarkd_digit(SCALAR e, uint j, uint bits) {
  const uint skip = j * bits;
  const uint w = min(bits, 256u - skip);
  int d = (int)snarkd_bits(e, skip, w);
  if (j > 0 && (d >> (w - 1))) d -= (int)(1u << w);
  const uint below = skip + w;
  if (below < 256u && snarkd_bits(e, below, 1)) d += 1;
  return d;
}

// Inclusive sums over a work group's values in part[0..SNARKD_GROUP_ITEMS), doubling the span;
// every item of the group calls it (it holds barriers).
void snarkd_group_scan(LOCAL uint* part, uint lid) {
  BARRIER_LOCAL();
  for (uint span = 1; span < SNARKD_GROUP_ITEMS; span <<= 1) {
    const uint v = lid >= span ? part[lid - span] : 0;
    BARRIER_LOCAL();
    part[lid] += v;
    BARRIER_LOCAL();
  }
}

// bucket_counts[g] (zeroed before) ends as the number of pairs in bucket g; a work item a term.
KERNEL void snarkd_digit_count(GLOBAL SCALAR* exps, GLOBAL uint* split_counts, uint chunk,
                               uint max_bits, uint capacity, GLOBAL uint* bucket_counts) {
  const uint k = GET_GLOBAL_ID();
  const snarkd_shape s = snarkd_shape_of(split_counts, chunk, max_bits, capacity);
  if (k >= s.n) return;
  const SCALAR e = exps[k];
  for (uint j = 0; j < s.windows; j++) {
    const int d = snarkd_digit(e, j, s.bits);
    if (d != 0) atomic_inc(&bucket_counts[j * s.buckets + abs(d) - 1]);
  }
}

// Exclusive prefix sums of bucket_counts into starts, in three launches. Here: work group b
// takes elements [b·SNARKD_SCAN_BLOCK, (b + 1)·SNARKD_SCAN_BLOCK), writes each one's sum within
// the block, and the block's total to block_sums[b].
KERNEL void snarkd_scan_blocks(GLOBAL uint* split_counts, uint chunk, uint max_bits,
                               uint capacity, GLOBAL uint* bucket_counts, GLOBAL uint* starts,
                               GLOBAL uint* block_sums) {
  LOCAL uint part[SNARKD_GROUP_ITEMS];
  const uint per_item = SNARKD_SCAN_BLOCK / SNARKD_GROUP_ITEMS;
  const snarkd_shape s = snarkd_shape_of(split_counts, chunk, max_bits, capacity);
  const uint lid = GET_LOCAL_ID();
  const uint first = GET_GROUP_ID() * SNARKD_SCAN_BLOCK + lid * per_item;
  uint mine = 0;
  for (uint i = first; i < first + per_item && i < s.len; i++) mine += bucket_counts[i];
  part[lid] = mine;
  snarkd_group_scan(part, lid);
  uint run = part[lid] - mine;
  for (uint i = first; i < first + per_item && i < s.len; i++) {
    starts[i] = run;
    run += bucket_counts[i];
  }
  if (lid == SNARKD_GROUP_ITEMS - 1) block_sums[GET_GROUP_ID()] = part[lid];
}

// One work group turns the blocks' totals into their exclusive prefix sums, SNARKD_GROUP_ITEMS
// blocks at a time, and writes the number of pairs to starts[len] and split_counts[2] (read
// back with the split's counts: the bucket sums' additions).
KERNEL void snarkd_scan_totals(GLOBAL uint* split_counts, uint chunk, uint max_bits,
                               uint capacity, GLOBAL uint* block_sums, GLOBAL uint* starts) {
  LOCAL uint part[SNARKD_GROUP_ITEMS];
  const snarkd_shape s = snarkd_shape_of(split_counts, chunk, max_bits, capacity);
  const uint blocks = (s.len + SNARKD_SCAN_BLOCK - 1) / SNARKD_SCAN_BLOCK;
  const uint lid = GET_LOCAL_ID();
  uint carry = 0;
  for (uint tile = 0; tile < blocks; tile += SNARKD_GROUP_ITEMS) {
    const uint i = tile + lid;
    const uint v = i < blocks ? block_sums[i] : 0;
    part[lid] = v;
    snarkd_group_scan(part, lid);
    if (i < blocks) block_sums[i] = carry + part[lid] - v;
    const uint tile_sum = part[SNARKD_GROUP_ITEMS - 1];
    BARRIER_LOCAL();
    carry += tile_sum;
  }
  if (lid == 0) {
    starts[s.len] = carry;
    split_counts[2] = carry;
  }
}

// Adds each block's prefix to its elements; a work item an element.
KERNEL void snarkd_scan_add(GLOBAL uint* split_counts, uint chunk, uint max_bits,
                            uint capacity, GLOBAL uint* block_sums, GLOBAL uint* starts) {
  const uint i = GET_GLOBAL_ID();
  const snarkd_shape s = snarkd_shape_of(split_counts, chunk, max_bits, capacity);
  if (i < s.len) starts[i] += block_sums[i / SNARKD_SCAN_BLOCK];
}

// Writes every pair into its bucket's run, counting bucket_counts back down to zero (the order
// within a run is whatever the atomics give: addition does not mind); a work item a term.
KERNEL void snarkd_digit_scatter(GLOBAL SCALAR* exps, GLOBAL uint* rest,
                                 GLOBAL uint* split_counts, uint chunk, uint max_bits,
                                 uint capacity, GLOBAL uint* bucket_counts, GLOBAL uint* starts,
                                 GLOBAL uint* sorted) {
  const uint k = GET_GLOBAL_ID();
  const snarkd_shape s = snarkd_shape_of(split_counts, chunk, max_bits, capacity);
  if (k >= s.n) return;
  const SCALAR e = exps[k];
  const uint term = rest[k];
  for (uint j = 0; j < s.windows; j++) {
    const int d = snarkd_digit(e, j, s.bits);
    if (d != 0) {
      const uint g = j * s.buckets + abs(d) - 1;
      const uint slot = starts[g] + atomic_dec(&bucket_counts[g]) - 1;
      sorted[slot] = term | (d < 0 ? 0x80000000u : 0u);
    }
  }
}
