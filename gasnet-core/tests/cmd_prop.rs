//! Property tests of the command encodings: every valid descriptor,
//! completion and receive entry survives encode → decode; arbitrary bytes
//! never panic a decoder and are accepted only in their one canonical
//! encoding; specific malformations map to specific errors.

use gasnet_core::cmd::{
    self, AmBody, Args, CmdError, Common, Completion, Descriptor, Inline, Local, PutSource,
    RxEntry, Status, flags, opcode,
};
use gasnet_core::{AmoOp, AmoWidth, Category, Direction, MAX_LONG, MAX_MEDIUM};
use proptest::prelude::*;

fn common() -> impl Strategy<Value = Common> {
    (any::<u32>(), any::<bool>(), any::<bool>()).prop_map(|(tag, completion, fence_before)| {
        Common {
            tag,
            completion,
            fence_before,
        }
    })
}

fn local() -> impl Strategy<Value = Local> {
    prop_oneof![
        any::<u64>().prop_map(Local::Segment),
        any::<u64>().prop_map(Local::Iova)
    ]
}

fn args(max: usize) -> impl Strategy<Value = Args> {
    prop::collection::vec(any::<u32>(), 0..=max).prop_map(|v| Args::new(&v).unwrap())
}

fn direction() -> impl Strategy<Value = Direction> {
    prop_oneof![Just(Direction::Request), Just(Direction::Reply)]
}

fn body() -> impl Strategy<Value = AmBody> {
    prop_oneof![
        Just(AmBody::Short),
        (local(), 0..=MAX_MEDIUM as u32).prop_map(|(local, len)| AmBody::Medium { local, len }),
        (local(), 0..=MAX_LONG as u32, any::<u64>())
            .prop_map(|(local, len, remote)| AmBody::Long { local, len, remote }),
    ]
}

fn amo() -> impl Strategy<Value = Descriptor> {
    (
        common(),
        any::<u16>(),
        prop::sample::select(AmoOp::ALL.to_vec()),
        prop_oneof![Just(AmoWidth::W32), Just(AmoWidth::W64)],
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(|(common, target, op, width, remote, operand, compare)| {
            let m = width.mask();
            Descriptor::Amo {
                common,
                target,
                op,
                width,
                remote: remote & !(width.bytes() as u64 - 1),
                operand: if op == AmoOp::Fetch { 0 } else { operand & m },
                compare: if op == AmoOp::CompareSwap {
                    compare & m
                } else {
                    0
                },
            }
        })
}

fn descriptor() -> impl Strategy<Value = Descriptor> {
    prop_oneof![
        common().prop_map(|common| Descriptor::Nop { common }),
        common().prop_map(|common| Descriptor::Fence { common }),
        (
            common(),
            any::<u16>(),
            any::<u64>(),
            prop_oneof![
                (local(), 0..=cmd::MAX_TRANSFER)
                    .prop_map(|(addr, len)| PutSource::Local { addr, len }),
                prop::collection::vec(any::<u8>(), 0..=cmd::MAX_INLINE)
                    .prop_map(|v| PutSource::Inline(Inline::new(&v).unwrap())),
            ]
        )
            .prop_map(|(common, target, remote, source)| Descriptor::Put {
                common,
                target,
                remote,
                source
            }),
        (
            common(),
            any::<u16>(),
            any::<u64>(),
            local(),
            0..=cmd::MAX_TRANSFER
        )
            .prop_map(|(common, target, remote, local, len)| Descriptor::Get {
                common,
                target,
                remote,
                local,
                len
            }),
        (
            common(),
            any::<u16>(),
            direction(),
            1..=255u8,
            args(16),
            body()
        )
            .prop_map(|(common, target, direction, handler, args, body)| {
                Descriptor::Am {
                    common,
                    target,
                    direction,
                    handler,
                    args,
                    body,
                }
            }),
        amo(),
    ]
}

fn completion() -> impl Strategy<Value = Completion> {
    (
        any::<u32>(),
        prop::sample::select(Status::ALL.to_vec()),
        any::<u8>(),
        any::<u16>(),
        any::<u64>(),
        any::<u32>(),
        any::<u32>(),
        any::<u16>(),
        any::<bool>(),
    )
        .prop_map(
            |(tag, status, opcode, target, value, bytes, detail, sq_index, phase)| Completion {
                tag,
                status,
                opcode,
                target,
                value,
                bytes,
                detail,
                sq_index,
                phase,
            },
        )
}

fn rx_entry() -> impl Strategy<Value = RxEntry> {
    (
        any::<u16>(),
        direction(),
        prop_oneof![
            Just(Category::Short),
            Just(Category::Medium),
            Just(Category::Long)
        ],
        1..=255u8,
        args(16),
        any::<u32>(),
        any::<u64>(),
        any::<bool>(),
    )
        .prop_map(
            |(src, direction, category, handler, args, len, addr, phase)| {
                let (len, addr) = match category {
                    Category::Short => (0, 0),
                    Category::Medium => (len % (MAX_MEDIUM as u32 + 1), addr),
                    Category::Long => (len % (MAX_LONG as u32 + 1), addr),
                };
                RxEntry {
                    src,
                    direction,
                    category,
                    handler,
                    args,
                    len,
                    addr,
                    phase,
                }
            },
        )
}

/// A valid descriptor of each opcode that has one slot, for mutation tests.
fn short_am(nargs: usize) -> Descriptor {
    Descriptor::Am {
        common: Common {
            tag: 0xABCD,
            completion: true,
            fence_before: false,
        },
        target: 9,
        direction: Direction::Request,
        handler: 100,
        args: Args::new(&(1..=nargs as u32).collect::<Vec<_>>()).unwrap(),
        body: AmBody::Short,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn descriptors_round_trip(d in descriptor()) {
        let e = cmd::encode_slots(&d);
        let bytes = e.to_vec();
        prop_assert_eq!(bytes.len(), 64 * d.slots());
        prop_assert_eq!(cmd::slot_count(&bytes), Ok(d.slots()));
        prop_assert_eq!(cmd::encode(&d), e.as_slots()[0]);
        prop_assert_eq!(bytes[0], d.opcode());
        prop_assert_eq!(cmd::decode(&bytes), Ok(d));
        prop_assert_eq!(d.validate(), Ok(()));
        // The continuation need not follow its head in memory (ring wrap).
        let slots = e.as_slots();
        prop_assert_eq!(cmd::decode_chain(&slots[0], slots.get(1).map(|s| &s[..])), Ok(d));
        // Trailing bytes after the descriptor are ignored.
        let mut longer = bytes.clone();
        longer.extend_from_slice(&[0xFF; 64]);
        prop_assert_eq!(cmd::decode(&longer), Ok(d));
    }

    #[test]
    fn completions_round_trip(c in completion()) {
        let b = c.encode();
        prop_assert_eq!(b[31] & 1 == 1, c.phase);
        prop_assert_eq!(Completion::decode(&b), Ok(c));
    }

    #[test]
    fn rx_entries_round_trip(r in rx_entry()) {
        let b = r.encode();
        prop_assert_eq!(b[1] & 1 == 1, r.phase);
        prop_assert_eq!(RxEntry::decode(&b), Ok(r));
    }

    /// Arbitrary bytes never panic, and are accepted only if they are the
    /// canonical encoding of what they decode to.
    #[test]
    fn arbitrary_bytes_are_canonical_or_rejected(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(d) = cmd::decode(&bytes) {
            prop_assert_eq!(&cmd::encode_slots(&d).to_vec()[..], &bytes[..64 * d.slots()]);
        } else if bytes.len() < 64 {
            prop_assert_eq!(cmd::decode(&bytes), Err(CmdError::Truncated { needed: 64, got: bytes.len() }));
        }
        if let Ok(c) = Completion::decode(&bytes) {
            prop_assert_eq!(&c.encode()[..], &bytes[..32]);
        }
        if let Ok(r) = RxEntry::decode(&bytes) {
            prop_assert_eq!(&r.encode()[..], &bytes[..128]);
        }
    }

    /// Valid encodings with a few bytes changed reach every deeper check;
    /// they too decode only to what re-encodes to them, and every error
    /// renders and maps to a non-Ok status.
    #[test]
    fn mutated_encodings_are_canonical_or_rejected(
        d in descriptor(),
        pokes in prop::collection::vec((0..128usize, any::<u8>()), 1..4),
    ) {
        let mut b = cmd::encode_slots(&d).to_vec();
        b.resize(128, 0);
        for (i, v) in pokes {
            b[i] = v;
        }
        match cmd::decode(&b) {
            Ok(d) => prop_assert_eq!(&cmd::encode_slots(&d).to_vec()[..], &b[..64 * d.slots()]),
            Err(e) => {
                prop_assert!(!e.to_string().is_empty());
                prop_assert_ne!(e.status(), Status::Ok);
            }
        }
    }

    #[test]
    fn mutated_entries_are_canonical_or_rejected(
        c in completion(),
        r in rx_entry(),
        pokes in prop::collection::vec((0..128usize, any::<u8>()), 1..4),
    ) {
        let mut cb = c.encode().to_vec();
        let mut rb = r.encode().to_vec();
        for (i, v) in pokes {
            cb[i % 32] = v;
            rb[i] = v;
        }
        if let Ok(c) = Completion::decode(&cb) {
            prop_assert_eq!(&c.encode()[..], &cb[..]);
        }
        if let Ok(r) = RxEntry::decode(&rb) {
            prop_assert_eq!(&r.encode()[..], &rb[..]);
        }
    }

    #[test]
    fn unknown_opcodes_are_named(op in any::<u8>(), rest in prop::collection::vec(any::<u8>(), 63)) {
        prop_assume!(![0x01u8, 0x02, 0x08, 0x09, 0x10, 0x11, 0x12, 0x18, 0x19, 0x1A, 0x1F, 0x20].contains(&op));
        let mut b = vec![op];
        b.extend(rest);
        prop_assert_eq!(cmd::decode(&b), Err(CmdError::UnknownOpcode(op)));
        prop_assert_eq!(CmdError::UnknownOpcode(op).status(), Status::BadOpcode);
    }

    #[test]
    fn undefined_flag_bits_are_named(d in descriptor(), bits in 1u8..8) {
        let mut b = cmd::encode_slots(&d).to_vec();
        b[1] |= bits << 5;
        prop_assert_eq!(cmd::decode(&b), Err(CmdError::BadFlags { opcode: d.opcode(), flags: bits << 5 }));
    }

    #[test]
    fn truncation_is_named(d in descriptor(), cut in 0usize..128) {
        let b = cmd::encode_slots(&d).to_vec();
        let cut = cut % b.len();
        let needed = if cut < 64 { 64 } else { 128 };
        prop_assert_eq!(cmd::decode(&b[..cut]), Err(CmdError::Truncated { needed, got: cut }));
    }

    #[test]
    fn reserved_bytes_of_nop_and_fence_are_checked(fence in any::<bool>(), at in 8usize..64, v in 1u8..) {
        let common = Common { tag: 5, completion: false, fence_before: true };
        let d = if fence { Descriptor::Fence { common } } else { Descriptor::Nop { common } };
        let mut b = cmd::encode(&d);
        b[at] = v;
        prop_assert_eq!(cmd::decode(&b), Err(CmdError::ReservedNonZero { offset: at, value: v }));
    }

    #[test]
    fn reserved_bytes_of_put_are_checked(at in prop::sample::select(vec![8usize, 9, 10, 11, 32, 40, 63]), v in 1u8..) {
        let d = Descriptor::Put {
            common: Common::default(),
            target: 1,
            remote: 64,
            source: PutSource::Local { addr: Local::Segment(0), len: 8 },
        };
        let mut b = cmd::encode(&d);
        b[at] = v;
        prop_assert_eq!(cmd::decode(&b), Err(CmdError::ReservedNonZero { offset: at, value: v }));
    }

    #[test]
    fn unused_argument_bytes_are_reserved(nargs in prop::sample::select(vec![0usize, 1, 5, 7, 9, 12, 15]), at in 0usize..32, v in 1u8..) {
        let mut b = cmd::encode_slots(&short_am(nargs)).to_vec();
        // Arguments fill bytes 32..64 of each slot; poke a byte past the last.
        let (slot, used) = if nargs > 8 { (64, nargs - 8) } else { (0, nargs) };
        let free = 32 - 4 * used;
        let offset = slot + 32 + 4 * used + at % free;
        b[offset] = v;
        prop_assert_eq!(cmd::decode(&b), Err(CmdError::ReservedNonZero { offset, value: v }));
    }

    #[test]
    fn bad_amo_codes_are_named(d in amo(), op in 12u8.., width in any::<u8>()) {
        let mut b = cmd::encode(&d);
        b[8] = op;
        prop_assert_eq!(cmd::decode(&b), Err(CmdError::BadAmoOp(op)));
        prop_assert_eq!(CmdError::BadAmoOp(op).status(), Status::BadAmo);
        let mut b = cmd::encode(&d);
        prop_assume!(width != 4 && width != 8);
        b[9] = width;
        prop_assert_eq!(cmd::decode(&b), Err(CmdError::BadAmoWidth(width)));
    }

    #[test]
    fn misaligned_atomics_are_named(d in amo(), skew in 1u64..8) {
        let Descriptor::Amo { width, remote, .. } = d else { unreachable!() };
        let skew = skew % width.bytes() as u64;
        prop_assume!(skew != 0);
        let mut b = cmd::encode(&d);
        b[24..32].copy_from_slice(&(remote | skew).to_le_bytes());
        prop_assert_eq!(
            cmd::decode(&b),
            Err(CmdError::Misaligned { offset: remote | skew, align: width.bytes() as u8 })
        );
    }

    #[test]
    fn wide_32_bit_operands_are_named(hi in 1u64..=u32::MAX as u64, lo in any::<u32>()) {
        let value = hi << 32 | lo as u64;
        let d = Descriptor::Amo {
            common: Common::default(),
            target: 0,
            op: AmoOp::CompareSwap,
            width: AmoWidth::W32,
            remote: 0,
            operand: value,
            compare: 0,
        };
        prop_assert_eq!(d.validate(), Err(CmdError::OperandTooWide { offset: 32, value }));
        let d = Descriptor::Amo { common: Common::default(), target: 0, op: AmoOp::CompareSwap, width: AmoWidth::W32, remote: 0, operand: 0, compare: value };
        prop_assert_eq!(d.validate(), Err(CmdError::OperandTooWide { offset: 40, value }));
    }

    #[test]
    fn too_many_args_are_named(n in 17u8..) {
        let mut b = cmd::encode_slots(&short_am(16)).to_vec();
        b[9] = n;
        prop_assert_eq!(cmd::decode(&b), Err(CmdError::TooManyArgs(n)));
        prop_assert_eq!(CmdError::TooManyArgs(n).detail(), n as u32);
    }

    #[test]
    fn lengths_over_limits_are_named(over in 1u32..1_000_000) {
        let put = Descriptor::Put {
            common: Common::default(),
            target: 1,
            remote: 0,
            source: PutSource::Local { addr: Local::Segment(0), len: cmd::MAX_TRANSFER + over },
        };
        prop_assert_eq!(put.validate(), Err(CmdError::LengthTooLong {
            opcode: opcode::PUT, len: cmd::MAX_TRANSFER + over, max: cmd::MAX_TRANSFER }));
        let get = Descriptor::Get {
            common: Common::default(),
            target: 1,
            remote: 0,
            local: Local::Iova(0),
            len: cmd::MAX_TRANSFER + over,
        };
        prop_assert_eq!(get.validate(), Err(CmdError::LengthTooLong {
            opcode: opcode::GET, len: cmd::MAX_TRANSFER + over, max: cmd::MAX_TRANSFER }));
        for (body, op, max) in [
            (AmBody::Medium { local: Local::Segment(0), len: MAX_MEDIUM as u32 + over }, opcode::AM_MEDIUM_REQUEST, MAX_MEDIUM as u32),
            (AmBody::Long { local: Local::Segment(0), len: MAX_LONG as u32 + over, remote: 0 }, opcode::AM_LONG_REQUEST, MAX_LONG as u32),
        ] {
            let Descriptor::Am { common, target, direction, handler, args, .. } = short_am(2) else { unreachable!() };
            let d = Descriptor::Am { common, target, direction, handler, args, body };
            let err = CmdError::LengthTooLong { opcode: op, len: max + over, max };
            prop_assert_eq!(d.validate(), Err(err));
            prop_assert_eq!(err.status(), Status::BadLength);
            prop_assert_eq!(err.detail(), max + over);
        }
        // Inline length over 32 in the bytes.
        let mut b = cmd::encode(&Descriptor::Put {
            common: Common::default(),
            target: 1,
            remote: 0,
            source: PutSource::Inline(Inline::new(&[1]).unwrap()),
        });
        let len = 32 + over;
        b[12..16].copy_from_slice(&len.to_le_bytes());
        prop_assert_eq!(cmd::decode(&b), Err(CmdError::LengthTooLong { opcode: opcode::PUT, len, max: 32 }));
    }

    #[test]
    fn short_am_with_length_is_named(len in 1u32..) {
        let mut b = cmd::encode(&short_am(1));
        b[12..16].copy_from_slice(&len.to_le_bytes());
        prop_assert_eq!(cmd::decode(&b), Err(CmdError::ShortWithPayload(len)));
    }

    #[test]
    fn chain_faults_are_named(nargs in 9usize..=16, other_op in any::<u8>(), other_tag in any::<u32>()) {
        let d = short_am(nargs);
        let good = cmd::encode_slots(&d).to_vec();
        // CHAIN cleared with more than 8 args.
        let mut b = good.clone();
        b[1] &= !flags::CHAIN;
        prop_assert_eq!(cmd::decode(&b), Err(CmdError::ChainMissing { nargs: nargs as u8 }));
        // CHAIN set with at most 8.
        let mut b = cmd::encode(&short_am(nargs - 8)).to_vec();
        b[1] |= flags::CHAIN;
        b.extend_from_slice(&good[64..]);
        prop_assert_eq!(cmd::decode(&b), Err(CmdError::ChainUnexpected { nargs: (nargs - 8) as u8 }));
        // Wrong continuation opcode.
        let mut b = good.clone();
        prop_assume!(other_op != opcode::AM_CONTINUATION);
        b[64] = other_op;
        prop_assert_eq!(cmd::decode(&b), Err(CmdError::BadContinuation { opcode: other_op }));
        // Continuation tag differs.
        let mut b = good.clone();
        prop_assume!(other_tag != 0xABCD);
        b[68..72].copy_from_slice(&other_tag.to_le_bytes());
        prop_assert_eq!(cmd::decode(&b), Err(CmdError::ContinuationTagMismatch { head: 0xABCD, continuation: other_tag }));
        // A continuation on its own.
        prop_assert_eq!(cmd::decode(&good[64..]), Err(CmdError::OrphanContinuation));
        // A chained head with no continuation given.
        prop_assert_eq!(cmd::decode_chain(&good[..64], None), Err(CmdError::Truncated { needed: 128, got: 64 }));
    }

    #[test]
    fn unknown_status_codes_are_named(c in completion(), code in 17u8..) {
        let mut b = c.encode();
        b[4] = code;
        prop_assert_eq!(Completion::decode(&b), Err(CmdError::UnknownStatus(code)));
    }

    #[test]
    fn completion_reserved_bits_are_checked(c in completion(), at in 26usize..32, v in 2u8..) {
        let mut b = c.encode();
        b[at] = v;
        let value = v | if at == 31 { b[31] & 1 } else { 0 };
        b[at] = value;
        prop_assert_eq!(Completion::decode(&b), Err(CmdError::ReservedNonZero { offset: at, value }));
    }

    #[test]
    fn rx_faults_are_named(r in rx_entry(), kind in any::<u8>(), n in 17u8..) {
        let mut b = r.encode();
        b[5] = n;
        prop_assert_eq!(RxEntry::decode(&b), Err(CmdError::TooManyArgs(n)));
        let mut b = r.encode();
        b[4] = 0;
        prop_assert_eq!(RxEntry::decode(&b), Err(CmdError::InvalidHandler(0)));
        let mut b = r.encode();
        prop_assume!(!matches!(kind, 0x10..=0x12 | 0x18..=0x1A));
        b[0] = kind;
        prop_assert_eq!(RxEntry::decode(&b), Err(CmdError::BadRxKind(kind)));
    }

    #[test]
    fn rejected_completion_reports_the_error(d in descriptor(), slot in any::<u16>(), phase in any::<bool>()) {
        let mut b = cmd::encode(&d);
        b[0] = 0xEE;
        let err = cmd::decode(&b).unwrap_err();
        prop_assert_eq!(err, CmdError::UnknownOpcode(0xEE));
        let c = Completion::rejected(&b, slot, phase, &err);
        prop_assert_eq!(c.status, Status::BadOpcode);
        prop_assert_eq!(c.detail, 0xEE);
        prop_assert_eq!(c.tag, d.common().tag);
        prop_assert_eq!(c.sq_index, slot);
        prop_assert_eq!(Completion::decode(&c.encode()), Ok(c));
    }
}

#[test]
fn fixed_malformations_map_to_their_variants() {
    // Handler 0.
    let mut b = cmd::encode(&short_am(0));
    b[8] = 0;
    assert_eq!(cmd::decode(&b), Err(CmdError::InvalidHandler(0)));
    // INLINE with LOCAL_IOVA.
    let mut b = cmd::encode(&Descriptor::Put {
        common: Common::default(),
        target: 0,
        remote: 0,
        source: PutSource::Inline(Inline::new(&[]).unwrap()),
    });
    b[1] |= flags::LOCAL_IOVA;
    assert_eq!(
        cmd::decode(&b),
        Err(CmdError::BadFlags {
            opcode: opcode::PUT,
            flags: flags::LOCAL_IOVA
        })
    );
    // INLINE on a Get, LOCAL_IOVA on a Short AM, CHAIN on an atomic.
    for (op, f) in [
        (opcode::GET, flags::INLINE),
        (opcode::AM_SHORT_REQUEST, flags::LOCAL_IOVA),
        (opcode::AMO, flags::CHAIN),
        (opcode::NOP, flags::LOCAL_IOVA),
    ] {
        let mut b = [0u8; 64];
        b[0] = op;
        b[1] = f;
        assert_eq!(
            cmd::decode(&b),
            Err(CmdError::BadFlags {
                opcode: op,
                flags: f
            })
        );
    }
    // A zeroed slot is not a Nop.
    assert_eq!(cmd::decode(&[0; 64]), Err(CmdError::UnknownOpcode(0)));
    // Fetch with an operand; a non-CompareSwap with a compare value.
    let fetch = Descriptor::Amo {
        common: Common::default(),
        target: 0,
        op: AmoOp::Fetch,
        width: AmoWidth::W64,
        remote: 8,
        operand: 0x100,
        compare: 0,
    };
    assert_eq!(
        fetch.validate(),
        Err(CmdError::ReservedNonZero {
            offset: 33,
            value: 1
        })
    );
    let add = Descriptor::Amo {
        common: Common::default(),
        target: 0,
        op: AmoOp::Add,
        width: AmoWidth::W64,
        remote: 8,
        operand: 1,
        compare: 2,
    };
    assert_eq!(
        add.validate(),
        Err(CmdError::ReservedNonZero {
            offset: 40,
            value: 2
        })
    );
    // Constructors refuse what cannot be encoded.
    assert_eq!(Args::new(&[0; 17]), Err(CmdError::TooManyArgs(17)));
    assert_eq!(
        Inline::new(&[0; 33]),
        Err(CmdError::LengthTooLong {
            opcode: opcode::PUT,
            len: 33,
            max: 32
        })
    );
    // Short buffers for the entries.
    assert_eq!(
        Completion::decode(&[0; 31]),
        Err(CmdError::Truncated {
            needed: 32,
            got: 31
        })
    );
    assert_eq!(
        RxEntry::decode(&[0; 127]),
        Err(CmdError::Truncated {
            needed: 128,
            got: 127
        })
    );
    // Errors are std errors with a message naming the value.
    let e: Box<dyn std::error::Error> = Box::new(CmdError::BadAmoWidth(3));
    assert!(e.to_string().contains('3'));
}

#[test]
fn status_codes_are_dense_and_stable() {
    for (i, s) in Status::ALL.iter().enumerate() {
        assert_eq!(s.code() as usize, i);
        assert_eq!(Status::from_code(i as u8), Some(*s));
    }
    assert_eq!(Status::from_code(17), None);
    assert!(Status::Ok.is_ok() && !Status::Aborted.is_ok());
}
