// Points in extended Jacobian coordinates, which the multiexp's sums are kept in: (X, Y, ZZ, ZZZ)
// is the affine point (X/ZZ, Y/ZZZ), with ZZ³ = ZZZ², and ZZ = 0 the identity. Adding an affine
// point costs 8 multiplications and 2 squarings here against 7 and 4 in Jacobian coordinates
// (ec-gpu-gen's squaring is a multiplication: 10 against 11), adding two such points 12 and 2
// against 11 and 5 (14 against 16). The formulas are the Explicit-Formulas Database's
// madd-2008-s, add-2008-s, dbl-2008-s-1 and mdbl-2008-s-1 for a = 0. POINT and FIELD are
// replaced as in snarkd_point.cl; results leave the device in ec-gpu-gen's Jacobian form
// (POINT_snarkd_jacobian), which the host reads as its projective points.

typedef struct {
  FIELD x;
  FIELD y;
  FIELD zz;
  FIELD zzz;
} POINT_xyzz;

DEVICE POINT_xyzz POINT_snarkd_zero() {
  POINT_xyzz r;
  r.x = FIELD_ONE;
  r.y = FIELD_ONE;
  r.zz = FIELD_ZERO;
  r.zzz = FIELD_ZERO;
  return r;
}

DEVICE bool POINT_snarkd_is_zero(POINT_xyzz p) {
  const FIELD zero = FIELD_ZERO;
  return FIELD_eq(p.zz, zero);
}

// 2·(x, y) for an affine point with y ≠ 0.
DEVICE POINT_xyzz POINT_snarkd_double_affine(FIELD x, FIELD y) {
  const FIELD u = FIELD_double(y);
  const FIELD v = FIELD_sqr(u);
  const FIELD w = FIELD_mul(u, v);
  const FIELD s = FIELD_mul(x, v);
  const FIELD xx = FIELD_sqr(x);
  const FIELD m = FIELD_add(FIELD_double(xx), xx);
  POINT_xyzz r;
  r.x = FIELD_sub(FIELD_sqr(m), FIELD_double(s));
  r.y = FIELD_sub(FIELD_mul(m, FIELD_sub(s, r.x)), FIELD_mul(w, y));
  r.zz = v;
  r.zzz = w;
  return r;
}

DEVICE POINT_xyzz POINT_snarkd_double(POINT_xyzz p) {
  if (POINT_snarkd_is_zero(p)) return p;
  const FIELD u = FIELD_double(p.y);
  const FIELD v = FIELD_sqr(u);
  const FIELD w = FIELD_mul(u, v);
  const FIELD s = FIELD_mul(p.x, v);
  const FIELD xx = FIELD_sqr(p.x);
  const FIELD m = FIELD_add(FIELD_double(xx), xx);
  POINT_xyzz r;
  r.x = FIELD_sub(FIELD_sqr(m), FIELD_double(s));
  r.y = FIELD_sub(FIELD_mul(m, FIELD_sub(s, r.x)), FIELD_mul(w, p.y));
  r.zz = FIELD_mul(v, p.zz);
  r.zzz = FIELD_mul(w, p.zzz);
  return r;
}

// a + b for an affine b that is not the identity (callers skip y = 0).
DEVICE POINT_xyzz POINT_snarkd_add_affine(POINT_xyzz a, POINT_affine b) {
  if (POINT_snarkd_is_zero(a)) {
    a.x = b.x;
    a.y = b.y;
    a.zz = FIELD_ONE;
    a.zzz = FIELD_ONE;
    return a;
  }
  const FIELD zero = FIELD_ZERO;
  const FIELD p = FIELD_sub(FIELD_mul(b.x, a.zz), a.x);
  const FIELD r = FIELD_sub(FIELD_mul(b.y, a.zzz), a.y);
  if (FIELD_eq(p, zero)) {
    // The same x: b doubled when it is a, the identity when it is −a.
    if (FIELD_eq(r, zero)) return POINT_snarkd_double_affine(b.x, b.y);
    return POINT_snarkd_zero();
  }
  const FIELD pp = FIELD_sqr(p);
  const FIELD ppp = FIELD_mul(p, pp);
  const FIELD q = FIELD_mul(a.x, pp);
  POINT_xyzz s;
  s.x = FIELD_sub(FIELD_sub(FIELD_sqr(r), ppp), FIELD_double(q));
  s.y = FIELD_sub(FIELD_mul(r, FIELD_sub(q, s.x)), FIELD_mul(a.y, ppp));
  s.zz = FIELD_mul(a.zz, pp);
  s.zzz = FIELD_mul(a.zzz, ppp);
  return s;
}

DEVICE POINT_xyzz POINT_snarkd_add(POINT_xyzz a, POINT_xyzz b) {
  if (POINT_snarkd_is_zero(a)) return b;
  if (POINT_snarkd_is_zero(b)) return a;
  const FIELD zero = FIELD_ZERO;
  const FIELD u1 = FIELD_mul(a.x, b.zz);
  const FIELD s1 = FIELD_mul(a.y, b.zzz);
  const FIELD p = FIELD_sub(FIELD_mul(b.x, a.zz), u1);
  const FIELD r = FIELD_sub(FIELD_mul(b.y, a.zzz), s1);
  if (FIELD_eq(p, zero)) {
    if (FIELD_eq(r, zero)) return POINT_snarkd_double(a);
    return POINT_snarkd_zero();
  }
  const FIELD pp = FIELD_sqr(p);
  const FIELD ppp = FIELD_mul(p, pp);
  const FIELD q = FIELD_mul(u1, pp);
  POINT_xyzz s;
  s.x = FIELD_sub(FIELD_sub(FIELD_sqr(r), ppp), FIELD_double(q));
  s.y = FIELD_sub(FIELD_mul(r, FIELD_sub(q, s.x)), FIELD_mul(s1, ppp));
  s.zz = FIELD_mul(FIELD_mul(a.zz, b.zz), pp);
  s.zzz = FIELD_mul(FIELD_mul(a.zzz, b.zzz), ppp);
  return s;
}

// The same point in Jacobian coordinates (x = X/Z², y = Y/Z³): Z = ZZZ, X = X·ZZ², Y = Y·ZZZ².
DEVICE POINT_jacobian POINT_snarkd_jacobian(POINT_xyzz p) {
  if (POINT_snarkd_is_zero(p)) return POINT_ZERO;
  POINT_jacobian r;
  r.x = FIELD_mul(p.x, FIELD_sqr(p.zz));
  r.y = FIELD_mul(p.y, FIELD_sqr(p.zzz));
  r.z = p.zzz;
  return r;
}

// A Jacobian point in these coordinates: ZZ = Z², ZZZ = Z³.
DEVICE POINT_xyzz POINT_snarkd_xyzz(POINT_jacobian p) {
  const FIELD zero = FIELD_ZERO;
  if (FIELD_eq(p.z, zero)) return POINT_snarkd_zero();
  POINT_xyzz r;
  r.x = p.x;
  r.y = p.y;
  r.zz = FIELD_sqr(p.z);
  r.zzz = FIELD_mul(r.zz, p.z);
  return r;
}
