//! Fuzzing of the bootstrap decoders, which read bytes from the network or
//! a launcher: rendezvous frames (`Frame::from_bytes`, `Frame::decode`) and
//! PMI-1 response lines (`Line::parse`), with proptest for a bounded number
//! of cases (`PROPTEST_CASES`, default 1500): arbitrary input, and valid
//! frames and lines with byte flips, truncations and extensions. They may
//! refuse; they must never panic.

use conduits::bootstrap::pmi::Line;
use conduits::bootstrap::rendezvous::Frame;
use proptest::prelude::*;

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1500)
}

fn frame() -> impl Strategy<Value = Frame> {
    prop_oneof![
        (any::<u32>(), any::<u32>()).prop_map(|(rank, size)| Frame::Hello { rank, size }),
        (any::<u32>(), prop::collection::vec(any::<u8>(), 0..64))
            .prop_map(|(round, blob)| Frame::Gather { round, blob }),
        Just(Frame::Bye),
        (
            any::<u32>(),
            prop::collection::vec(prop::collection::vec(any::<u8>(), 0..16), 0..6)
        )
            .prop_map(|(round, blobs)| Frame::Result { round, blobs }),
        (any::<u32>(), ".{0,40}").prop_map(|(rank, reason)| Frame::Fail { rank, reason }),
    ]
}

fn mutate(
    mut b: Vec<u8>,
    flips: &[(prop::sample::Index, u8)],
    cut: Option<prop::sample::Index>,
    extra: &[u8],
) -> Vec<u8> {
    for (i, x) in flips {
        if !b.is_empty() {
            let i = i.index(b.len());
            b[i] ^= x;
        }
    }
    if let Some(c) = cut {
        let n = c.index(b.len() + 1);
        b.truncate(n);
    }
    b.extend_from_slice(extra);
    b
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn frames_round_trip_and_mutations_never_panic(
        f in frame(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 1..=255u8), 0..3),
        cut in prop::option::of(any::<prop::sample::Index>()),
        extra in prop::collection::vec(any::<u8>(), 0..8),
    ) {
        let enc = f.encode();
        prop_assert_eq!(Frame::from_bytes(&enc), Ok(f));
        let m = mutate(enc, &flips, cut, &extra);
        let _ = Frame::from_bytes(&m);
        if let Some((&t, body)) = m.split_first() {
            let _ = Frame::decode(t, body);
            let _ = Frame::decode(t, body.get(4..).unwrap_or(&[]));
        }
    }

    #[test]
    fn arbitrary_frame_bytes(t in any::<u8>(), body in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = Frame::decode(t, &body);
        let mut whole = vec![t];
        whole.extend_from_slice(&(body.len() as u32).to_be_bytes());
        whole.extend_from_slice(&body);
        let _ = Frame::from_bytes(&whole);
    }

    #[test]
    fn pmi_lines_never_panic(s in "\\PC{0,80}", valid in "cmd=[a-z_]{1,12}( [a-z_]{1,8}=[!-~]{0,12}){0,5}", flip in any::<prop::sample::Index>(), cut in any::<prop::sample::Index>()) {
        let _ = Line::parse(&s);
        let l = Line::parse(&valid);
        prop_assert!(l.is_ok(), "{valid:?}: {l:?}");
        let mut b = valid.clone().into_bytes();
        let i = flip.index(b.len());
        b[i] = b[i].wrapping_add(1);
        b.truncate(cut.index(b.len() + 1));
        let _ = Line::parse(&String::from_utf8_lossy(&b));
    }
}
