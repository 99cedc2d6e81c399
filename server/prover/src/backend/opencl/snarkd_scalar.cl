// snarkd's kernels over the scalar field. SCALAR is replaced by the generated name of
// BLS12-381's scalar field (ec-gpu-gen's field code: Montgomery form, SCALAR_ONE is R mod r).

// x[i] *= scale * g^i. Work item `gid` takes gid, gid + items, gid + 2·items, …: one power by
// squaring per work item, then one multiplication by g^items per element (`g_stride`).
KERNEL void snarkd_scale_by_powers(GLOBAL SCALAR* x, uint n, SCALAR scale, SCALAR g,
                                   SCALAR g_stride) {
  const uint gid = GET_GLOBAL_ID();
  const uint items = get_global_size(0);
  if (gid >= n) return;
  SCALAR p = SCALAR_mul(scale, SCALAR_pow(g, gid));
  for (uint i = gid; i < n; i += items) {
    x[i] = SCALAR_mul(x[i], p);
    p = SCALAR_mul(p, g_stride);
  }
}

// c[i] = a[i] * b[i]: the C evaluations of a satisfied R1CS, formed here instead of uploaded.
KERNEL void snarkd_product(GLOBAL SCALAR* a, GLOBAL SCALAR* b, GLOBAL SCALAR* c, uint n) {
  const uint i = GET_GLOBAL_ID();
  if (i >= n) return;
  c[i] = SCALAR_mul(a[i], b[i]);
}

// a[i] = (a[i] * b[i] - c[i]) * z_inv: the quotient by t(x), constant on the coset.
KERNEL void snarkd_h_combine(GLOBAL SCALAR* a, GLOBAL SCALAR* b, GLOBAL SCALAR* c, uint n,
                             SCALAR z_inv) {
  const uint i = GET_GLOBAL_ID();
  if (i >= n) return;
  a[i] = SCALAR_mul(SCALAR_sub(SCALAR_mul(a[i], b[i]), c[i]), z_inv);
}

// The scalars of terms start..start+n of a multiexp, split three ways: zeros are dropped, the
// terms whose scalar is one are listed in `ones`, the rest in `rest` with their canonical
// (non-Montgomery) value in `exps` at the same position. Term t's scalar is
// scalars[map[t]] when `use_map`, else scalars[offset + t]. Positions are relative to `start`.
// counts[0] and counts[1] (zeroed before) end as the lengths of `ones` and `rest`; each work
// group takes its slots with one atomic per list.
KERNEL void snarkd_split(GLOBAL SCALAR* scalars, GLOBAL uint* map, uint use_map, uint offset,
                         uint start, uint n, GLOBAL uint* ones, GLOBAL uint* rest,
                         GLOBAL SCALAR* exps, GLOBAL uint* counts) {
  LOCAL uint group_ones, group_rest, base_ones, base_rest;
  const uint i = GET_GLOBAL_ID();
  const uint lid = GET_LOCAL_ID();
  if (lid == 0) {
    group_ones = 0;
    group_rest = 0;
  }
  BARRIER_LOCAL();
  uint kind = 0;
  uint slot = 0;
  SCALAR s = SCALAR_ZERO;
  if (i < n) {
    const uint t = start + i;
    s = scalars[use_map ? map[t] : offset + t];
    const SCALAR one = SCALAR_ONE;
    const SCALAR zero = SCALAR_ZERO;
    if (SCALAR_eq(s, one)) {
      kind = 1;
      slot = atomic_inc(&group_ones);
    } else if (!SCALAR_eq(s, zero)) {
      kind = 2;
      slot = atomic_inc(&group_rest);
    }
  }
  BARRIER_LOCAL();
  if (lid == 0) {
    base_ones = atomic_add(&counts[0], group_ones);
    base_rest = atomic_add(&counts[1], group_rest);
  }
  BARRIER_LOCAL();
  if (kind == 1) {
    ones[base_ones + slot] = i;
  } else if (kind == 2) {
    rest[base_rest + slot] = i;
    exps[base_rest + slot] = SCALAR_unmont(s);
  }
}
