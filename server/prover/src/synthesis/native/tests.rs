//! The native computations against bellperson's gadgets run on bellperson's witness-only
//! constraint system (`WitnessCS`, which allocates as ours does): the same aux values in the same
//! order, results of the same form and value, and digests equal to the `sha2` crate's.

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::multieq::MultiEq;
use bellperson::gadgets::num::AllocatedNum;
use bellperson::gadgets::uint32::UInt32;
use bellperson::gadgets::{multipack, sha256 as gadget};
use bellperson::util_cs::witness_cs::WitnessCS;
use bellperson::ConstraintSystem;
use blstrs::Scalar as Fr;
use ff::{Field, PrimeField, PrimeFieldBits};
use filecoin_hashers::sha256::{Sha256Domain, Sha256Function};
use filecoin_hashers::HashFunction;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sha2::{Digest, Sha256};
use storage_proofs_core::gadgets::uint64::UInt64;
use storage_proofs_core::util::reverse_bit_numbering;
use storage_proofs_porep::stacked::{create_label_circuit, TOTAL_PARENTS};

use super::bit::Bit;
use super::label::label;
use super::pack::{pack_bits, reverse_bits_in_bytes};
use super::sha256::sha256;
use super::word::Word;
use crate::synthesis::precompiled::Column;

/// Both sides of a comparison: the gadgets' constraint system and the native aux vector.
struct Twin {
    cs: WitnessCS<Fr>,
    aux: Column<'static>,
}

/// How random inputs are drawn: one form per `run` bits, constant with odds `constant` in 8,
/// a negated variable with odds `negated` in 8, otherwise a variable.
#[derive(Clone, Copy, Debug)]
struct Mix {
    constant: u32,
    negated: u32,
    run: usize,
}

/// A [`Mix`], shortly.
const fn mix(constant: u32, negated: u32, run: usize) -> Mix {
    Mix {
        constant,
        negated,
        run,
    }
}

/// All variables; a bit-by-bit mix of the three forms; whole words and longer runs of one form
/// (so that whole words are constant and the shortcuts meet words of variables); all constants.
const MIXES: [Mix; 5] = [
    mix(0, 0, 1),
    mix(3, 2, 1),
    mix(4, 2, 32),
    mix(6, 1, 96),
    mix(8, 0, 1),
];

impl Twin {
    fn new() -> Self {
        Twin {
            cs: WitnessCS::new(),
            aux: Column::with_capacity(0),
        }
    }

    /// `bit` on both sides: a variable (negated or not) is allocated on both.
    fn input(&mut self, bit: Bit) -> Boolean {
        match bit {
            Bit::Const(v) => Boolean::Constant(v),
            Bit::Var(v) | Bit::NotVar(v) => {
                Bit::alloc(&mut self.aux, v);
                let var = AllocatedBit::alloc(&mut self.cs, Some(v)).unwrap();
                match bit {
                    Bit::NotVar(_) => Boolean::Not(var),
                    _ => Boolean::Is(var),
                }
            }
        }
    }

    /// `n` random bits drawn as `mix` says.
    fn random(&mut self, rng: &mut ChaCha8Rng, n: usize, mix: Mix) -> (Vec<Boolean>, Vec<Bit>) {
        let mut form = 0;
        let native: Vec<Bit> = (0..n)
            .map(|i| {
                if i % mix.run == 0 {
                    form = rng.gen_range(0..8);
                }
                let v = rng.gen();
                if form < mix.constant {
                    Bit::Const(v)
                } else if form < mix.constant + mix.negated {
                    Bit::NotVar(v)
                } else {
                    Bit::Var(v)
                }
            })
            .collect();
        let gadget = native.iter().map(|&bit| self.input(bit)).collect();
        (gadget, native)
    }

    /// The 255 bits of `value`, least significant first, as `AllocatedNum::alloc` then
    /// `to_bits_le` allocate them (the number, then its bits).
    fn number_bits(&mut self, value: Fr) -> (Vec<Boolean>, Vec<Bit>) {
        let num = AllocatedNum::alloc(&mut self.cs, || Ok(value)).unwrap();
        let gadget = num.to_bits_le(&mut self.cs).unwrap();
        self.aux.push(value);
        (gadget, self.value_bits(value))
    }

    /// Allocates the 255 bits of `value`, least significant first, natively.
    fn value_bits(&mut self, value: Fr) -> Vec<Bit> {
        value
            .to_le_bits()
            .iter()
            .take(Fr::NUM_BITS as usize)
            .map(|bit| Bit::alloc(&mut self.aux, *bit))
            .collect()
    }

    fn assert_same_aux(&self, what: &str) {
        let want = self.cs.aux_slice();
        assert_eq!(self.aux.len(), want.len(), "{what}: aux count");
        let first = self.aux.iter().zip(want).position(|(x, y)| x != y);
        assert_eq!(first, None, "{what}: first differing aux value");
    }
}

/// Whether `native` has the form and value of `gadget`, bit for bit.
fn same_bits(gadget: &[Boolean], native: &[Bit]) -> bool {
    gadget.len() == native.len()
        && gadget.iter().zip(native).all(|(g, &n)| match (g, n) {
            (Boolean::Constant(x), Bit::Const(y)) => *x == y,
            (Boolean::Is(x), Bit::Var(y)) | (Boolean::Not(x), Bit::NotVar(y)) => {
                x.get_value() == Some(y)
            }
            _ => false,
        })
}

/// Bits, most significant of each byte first, as bytes.
fn bytes(bits: &[Bit]) -> Vec<u8> {
    bits.chunks(8)
        .map(|byte| {
            byte.iter()
                .fold(0, |acc, b| (acc << 1) | u8::from(b.value()))
        })
        .collect()
}

/// The field element a digest packs into: read little-endian, low 254 bits.
fn packed_digest(data: &[u8]) -> Fr {
    let mut digest: [u8; 32] = Sha256::digest(data).into();
    digest[31] &= 0x3f;
    Fr::from_bytes_le(&digest).unwrap()
}

/// Every form (constant, variable, negated variable) with either value.
fn all_bits() -> impl Iterator<Item = Bit> {
    [false, true]
        .into_iter()
        .flat_map(|v| [Bit::Const(v), Bit::Var(v), Bit::NotVar(v)])
}

#[test]
fn each_bit_operation_allocates_as_the_gadget_for_every_form() {
    for a in all_bits() {
        for b in all_bits() {
            let mut twin = Twin::new();
            let (ga, gb) = (twin.input(a), twin.input(b));
            let want = [
                Boolean::xor(&mut twin.cs, &ga, &gb).unwrap(),
                Boolean::and(&mut twin.cs, &ga, &gb).unwrap(),
            ];
            let got = [a.xor(&mut twin.aux, b), a.and(&mut twin.aux, b)];
            twin.assert_same_aux(&format!("xor, and of {a:?} {b:?}"));
            assert!(same_bits(&want, &got), "{a:?} {b:?}: {got:?}");
            for c in all_bits() {
                let mut twin = Twin::new();
                let (ga, gb, gc) = (twin.input(a), twin.input(b), twin.input(c));
                let want = [
                    Boolean::sha256_ch(&mut twin.cs, &ga, &gb, &gc).unwrap(),
                    Boolean::sha256_maj(&mut twin.cs, &ga, &gb, &gc).unwrap(),
                ];
                let got = [
                    Bit::ch(&mut twin.aux, a, b, c),
                    Bit::maj(&mut twin.aux, a, b, c),
                ];
                twin.assert_same_aux(&format!("ch, maj of {a:?} {b:?} {c:?}"));
                assert!(same_bits(&want, &got), "{a:?} {b:?} {c:?}: {got:?}");
            }
        }
    }
}

#[test]
fn word_sums_allocate_as_addmany() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for terms in 2..=8 {
        for mix in MIXES {
            let mut twin = Twin::new();
            let (gadget, native) = twin.random(&mut rng, 32 * terms, mix);
            let want = {
                let words: Vec<UInt32> = gadget.chunks(32).map(UInt32::from_bits_be).collect();
                let mut cs = MultiEq::new(&mut twin.cs);
                UInt32::addmany(cs.namespace(|| "sum"), &words).unwrap()
            };
            let words: Vec<Word> = native.chunks(32).map(Word::from_be).collect();
            let got: Vec<Bit> = Word::add_many(&mut twin.aux, &words).be_bits().collect();
            twin.assert_same_aux(&format!("{terms} terms, {mix:?}"));
            assert!(
                same_bits(&want.into_bits_be(), &got),
                "{terms} terms, {mix:?}"
            );
        }
    }
}

#[test]
fn sha256_allocates_as_the_gadget_and_hashes_as_sha2() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for len in [0, 1, 3, 55, 56, 63, 64, 65, 119, 120, 200] {
        for mix in MIXES {
            let what = format!("{len} bytes, {mix:?}");
            let mut twin = Twin::new();
            let (gadget, native) = twin.random(&mut rng, 8 * len, mix);
            let want = gadget::sha256(&mut twin.cs, &gadget).unwrap();
            let got = sha256(&mut twin.aux, &native);
            twin.assert_same_aux(&what);
            assert!(same_bits(&want, &got), "{what}");
            assert_eq!(
                bytes(&got),
                Sha256::digest(bytes(&native)).to_vec(),
                "{what}"
            );
            if mix.constant == 8 {
                assert!(twin.aux.is_empty(), "{what}: constants allocate nothing");
            }
        }
    }
}

#[test]
fn pack_bits_allocates_as_multipack() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    for n in [0, 1, 7, 200, 253, 254, 255, 256, 300] {
        for mix in MIXES {
            let mut twin = Twin::new();
            let (gadget, native) = twin.random(&mut rng, n, mix);
            let want = multipack::pack_bits(&mut twin.cs, &gadget).unwrap();
            let got = pack_bits(&mut twin.aux, &native);
            twin.assert_same_aux(&format!("{n} bits, {mix:?}"));
            assert_eq!(Some(got), want.get_value(), "{n} bits, {mix:?}");
        }
    }
}

/// A label in the PoRep circuit's layout, both ways: the replica id and the distinct parents
/// unpacked from allocated numbers, the node an allocated `UInt64`, the layer a constant, the
/// parents repeated to 37 as the circuit does for `layer`.
fn check_label(rng: &mut ChaCha8Rng, layer: u32) {
    let mut twin = Twin::new();
    let unpacked = |twin: &mut Twin, value: Fr| {
        let (gadget, native) = twin.number_bits(value);
        (
            reverse_bit_numbering(gadget),
            reverse_bits_in_bytes(&native),
            value.to_bytes_le(),
        )
    };
    let (replica_gadget, replica_native, replica_bytes) =
        unpacked(&mut twin, Fr::random(&mut *rng));
    let node_value: u64 = rng.gen_range(0..1 << 30);
    let node_gadget = UInt64::alloc(&mut twin.cs, Some(node_value)).unwrap();
    let node: [Bit; 64] =
        std::array::from_fn(|i| Bit::alloc(&mut twin.aux, (node_value >> i) & 1 == 1));
    let distinct = if layer == 1 { 6 } else { 14 };
    let parents: Vec<_> = (0..distinct)
        .map(|_| unpacked(&mut twin, Fr::random(&mut *rng)))
        .collect();
    let order: Vec<usize> = (0..TOTAL_PARENTS).map(|i| i % distinct).collect();

    let want = create_label_circuit(
        &mut twin.cs,
        &replica_gadget,
        order.iter().map(|&i| parents[i].0.clone()).collect(),
        UInt32::constant(layer),
        node_gadget,
    )
    .unwrap();
    let native_parents: Vec<&[Bit]> = order.iter().map(|&i| &parents[i].1[..]).collect();
    let got = label(
        &mut twin.aux,
        &replica_native,
        &native_parents,
        &Bit::constants_le(u64::from(layer)),
        &node,
    );
    twin.aux.push(got);

    let what = format!("label in layer {layer}");
    twin.assert_same_aux(&what);
    assert_eq!(Some(got), want.get_value(), "{what}");
    let mut data = replica_bytes.to_vec();
    data.extend(layer.to_be_bytes());
    data.extend(node_value.to_be_bytes());
    data.resize(64, 0);
    for &i in &order {
        data.extend(parents[i].2);
    }
    assert_eq!(data.len(), 1_248);
    assert_eq!(got, packed_digest(&data), "{what}");
}

#[test]
fn label_allocates_as_create_label_circuit() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    check_label(&mut rng, 1);
    check_label(&mut rng, 2);
}

#[test]
fn a_hash2_input_allocates_as_hash2_circuit() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut twin = Twin::new();
    let (a, b) = (Fr::random(&mut rng), Fr::random(&mut rng));
    let a_num = AllocatedNum::alloc(&mut twin.cs, || Ok(a)).unwrap();
    let b_num = AllocatedNum::alloc(&mut twin.cs, || Ok(b)).unwrap();
    let want =
        <Sha256Function as HashFunction<Sha256Domain>>::hash2_circuit(&mut twin.cs, &a_num, &b_num)
            .unwrap();

    twin.aux.extend([a, b]);
    let mut preimage = Vec::new();
    for value in [a, b] {
        let bits = twin.value_bits(value);
        preimage.extend(reverse_bits_in_bytes(&bits));
    }
    assert_eq!(preimage.len(), 512);
    let digest = sha256(&mut twin.aux, &preimage);
    let got = pack_bits(&mut twin.aux, &reverse_bits_in_bytes(&digest));

    twin.assert_same_aux("hash2");
    assert_eq!(Some(got), want.get_value());
    let data = [a.to_bytes_le(), b.to_bytes_le()].concat();
    assert_eq!(got, packed_digest(&data));
}

/// `poseidon` against neptune's legacy circuit for each arity filecoin's circuits hash with
/// (2: TreeR/TreeC pairs, comm_r, SnapDeals' randomness; 8: tree levels; 11: PoRep columns),
/// on random preimages: the same aux values and the same hash.
#[test]
fn poseidon_allocates_as_the_legacy_circuit() {
    use filecoin_hashers::{POSEIDON_CONSTANTS_11, POSEIDON_CONSTANTS_2, POSEIDON_CONSTANTS_8};
    use neptune::poseidon::PoseidonConstants;
    use neptune::Arity;

    use super::poseidon::poseidon;

    fn check<A: Arity<Fr>>(rng: &mut ChaCha8Rng, c: &PoseidonConstants<Fr, A>) {
        let mut twin = Twin::new();
        let preimage: Vec<Fr> = (0..c.width() - 1).map(|_| Fr::random(&mut *rng)).collect();
        let nums = preimage
            .iter()
            .map(|v| AllocatedNum::alloc(&mut twin.cs, || Ok(*v)).unwrap())
            .collect();
        twin.aux.extend(&preimage);
        let want = neptune::circuit::poseidon_hash(&mut twin.cs, nums, c).unwrap();
        let got = poseidon(&mut twin.aux, &preimage, c);
        twin.aux.push(got);
        let what = format!("Poseidon of arity {}", c.width() - 1);
        twin.assert_same_aux(&what);
        assert_eq!(Some(got), want.get_value(), "{what}");
    }

    let mut rng = ChaCha8Rng::seed_from_u64(6);
    for _ in 0..2 {
        check(&mut rng, &POSEIDON_CONSTANTS_2);
        check(&mut rng, &POSEIDON_CONSTANTS_8);
        check(&mut rng, &POSEIDON_CONSTANTS_11);
    }
}
