//! [`Bit`]: one bit of a gadget's value as the witness sees it, and the one-bit operations of the
//! SHA-256 gadget (XOR, AND, Ch, Maj), each allocating exactly what bellperson's `Boolean` does.

use std::ops::Not;

use bellperson::gadgets::boolean::Boolean;
use blstrs::Scalar as Fr;
use ff::Field;

/// One bit in the form of bellperson's `Boolean`, without the variable's index: the witness needs
/// only values, but the form decides what the gadgets allocate (constants allocate nothing, and a
/// negated variable makes XOR return a negated result).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bit {
    /// A constant, no variable (`Boolean::Constant`).
    Const(bool),
    /// An allocated variable holding this value (`Boolean::Is`).
    Var(bool),
    /// The negation of an allocated variable holding this value (`Boolean::Not`); the bit itself
    /// is the opposite of the value held.
    NotVar(bool),
}

use crate::synthesis::precompiled::Column;
use Bit::{Const, NotVar, Var};

impl Not for Bit {
    type Output = Bit;

    /// The negation; allocates nothing (a variable becomes a negated variable and back).
    fn not(self) -> Bit {
        match self {
            Const(v) => Const(!v),
            Var(v) => NotVar(v),
            NotVar(v) => Var(v),
        }
    }
}

impl Bit {
    /// Allocates a variable holding `value` (appends it to `aux`), as `AllocatedBit::alloc` and
    /// the gadgets' result allocations do.
    pub(crate) fn alloc(aux: &mut Column<'_>, value: bool) -> Bit {
        aux.push(if value { Fr::ONE } else { Fr::ZERO });
        Var(value)
    }

    /// The bit a gadget's `Boolean` is, in the same form; `None` when it has no value (a blank
    /// circuit's).
    pub(crate) fn of(boolean: &Boolean) -> Option<Bit> {
        match boolean {
            Boolean::Constant(v) => Some(Const(*v)),
            Boolean::Is(bit) => bit.get_value().map(Var),
            Boolean::Not(bit) => bit.get_value().map(NotVar),
        }
    }

    /// The `N` bits of `value`, least significant first, as constants (`N` is at most 64).
    pub(crate) fn constants_le<const N: usize>(value: u64) -> [Bit; N] {
        const { assert!(N <= 64) };
        std::array::from_fn(|i| Const((value >> i) & 1 == 1))
    }

    /// The bit's value (a negated variable's is the opposite of what the variable holds).
    pub(crate) fn value(self) -> bool {
        match self {
            Const(v) | Var(v) => v,
            NotVar(v) => !v,
        }
    }

    /// Whether the bit is a constant (the gadgets' shortcuts and sums look at this).
    pub(crate) fn is_const(self) -> bool {
        matches!(self, Const(_))
    }

    /// `self XOR other`. With a constant operand, the other operand or its negation, nothing
    /// allocated. Otherwise one variable: the XOR of the two values held, whose negation is the
    /// result when exactly one operand is negated.
    pub(crate) fn xor(self, aux: &mut Column<'_>, other: Bit) -> Bit {
        match (self, other) {
            (Const(false), x) | (x, Const(false)) => x,
            (Const(true), x) | (x, Const(true)) => !x,
            (Var(x), Var(y)) | (NotVar(x), NotVar(y)) => Bit::alloc(aux, x ^ y),
            (Var(x), NotVar(y)) | (NotVar(x), Var(y)) => !Bit::alloc(aux, x ^ y),
        }
    }

    /// `self AND other`. With a constant operand, a constant or the other operand, nothing
    /// allocated; otherwise one variable holding the AND, whatever the negations.
    pub(crate) fn and(self, aux: &mut Column<'_>, other: Bit) -> Bit {
        match (self, other) {
            (Const(false), _) | (_, Const(false)) => Const(false),
            (Const(true), x) | (x, Const(true)) => x,
            (x, y) => Bit::alloc(aux, x.value() & y.value()),
        }
    }

    /// SHA-256's choice `(e AND f) XOR (NOT e AND g)`. The gadget tries its shortcuts in this
    /// order, and the first that fits decides what is allocated: all constants (nothing), `e`
    /// false (`g`), `f` false, `g` false, `g` true, `f` true (one AND each, possibly of
    /// negations). Otherwise (`e` true or a variable, `f` and `g` variables) one variable.
    pub(crate) fn ch(aux: &mut Column<'_>, e: Bit, f: Bit, g: Bit) -> Bit {
        let value = (e.value() & f.value()) ^ (!e.value() & g.value());
        match (e, f, g) {
            (Const(_), Const(_), Const(_)) => Const(value),
            (Const(false), _, g) => g,
            (e, Const(false), g) => (!e).and(aux, g),
            (e, f, Const(false)) => e.and(aux, f),
            (e, f, Const(true)) => !e.and(aux, !f),
            (e, Const(true), g) => !(!e).and(aux, !g),
            _ => Bit::alloc(aux, value),
        }
    }

    /// SHA-256's majority `(a AND b) XOR (a AND c) XOR (b AND c)`. Shortcuts in the gadget's
    /// order: all constants, then a false `a`, `b`, `c`, then a true `c`, `b`, `a` (one AND each).
    /// With three variables: the result, then `b AND c` (the gadget's helper product), in that
    /// order.
    pub(crate) fn maj(aux: &mut Column<'_>, a: Bit, b: Bit, c: Bit) -> Bit {
        let value = (a.value() & b.value()) ^ (a.value() & c.value()) ^ (b.value() & c.value());
        match (a, b, c) {
            (Const(_), Const(_), Const(_)) => Const(value),
            (Const(false), b, c) => b.and(aux, c),
            (a, Const(false), c) => a.and(aux, c),
            (a, b, Const(false)) => a.and(aux, b),
            (a, b, Const(true)) => !(!a).and(aux, !b),
            (a, Const(true), c) => !(!a).and(aux, !c),
            (Const(true), b, c) => !(!b).and(aux, !c),
            (_, b, c) => {
                let result = Bit::alloc(aux, value);
                Bit::alloc(aux, b.value() & c.value());
                result
            }
        }
    }
}
