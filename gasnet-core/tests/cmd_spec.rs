//! Keeps `spec/registers.md` and the code from drifting apart: every fenced
//! `hex` example in the spec must decode to the value this file states for
//! it and re-encode to exactly the spec's bytes, and every stated value must
//! appear in the spec. The register offsets and constants in the spec's
//! tables are checked against `gasnet_core::cmd` too.

use gasnet_core::cmd::{
    self, AmBody, Args, CmdError, Common, Completion, Descriptor, Inline, Local, PutSource,
    RxEntry, Status, regs,
};
use gasnet_core::{AmoOp, AmoWidth, Category, Direction};
use std::collections::BTreeMap;

/// What an example in the spec encodes.
#[derive(Debug)]
enum Expected {
    Descriptor(Descriptor),
    Completion(Completion),
    Rx(RxEntry),
    /// Bytes that must be rejected with this error.
    Malformed(CmdError),
}

fn common(tag: u32, completion: bool, fence_before: bool) -> Common {
    Common {
        tag,
        completion,
        fence_before,
    }
}

fn args(v: &[u32]) -> Args {
    Args::new(v).unwrap()
}

fn am(
    tag: u32,
    target: u16,
    direction: Direction,
    handler: u8,
    a: &[u32],
    body: AmBody,
) -> Expected {
    Expected::Descriptor(Descriptor::Am {
        common: common(tag, true, false),
        target,
        direction,
        handler,
        args: args(a),
        body,
    })
}

fn amo(tag: u32, op: AmoOp, width: AmoWidth, remote: u64, operand: u64, compare: u64) -> Expected {
    Expected::Descriptor(Descriptor::Amo {
        common: common(tag, true, false),
        target: 2,
        op,
        width,
        remote,
        operand,
        compare,
    })
}

/// The value each named example in the spec must encode.
fn expected() -> BTreeMap<&'static str, Expected> {
    use Direction::{Reply, Request};
    let mut m = BTreeMap::new();
    m.insert(
        "nop",
        Expected::Descriptor(Descriptor::Nop {
            common: common(0x0000_0001, true, false),
        }),
    );
    m.insert(
        "fence",
        Expected::Descriptor(Descriptor::Fence {
            common: common(0x0000_0002, true, false),
        }),
    );
    m.insert(
        "put-segment",
        Expected::Descriptor(Descriptor::Put {
            common: common(0x0000_1001, true, false),
            target: 3,
            remote: 0x2000,
            source: PutSource::Local {
                addr: Local::Segment(0x100),
                len: 4096,
            },
        }),
    );
    m.insert(
        "put-iova",
        Expected::Descriptor(Descriptor::Put {
            common: common(0x0000_1002, false, true),
            target: 1,
            remote: 0,
            source: PutSource::Local {
                addr: Local::Iova(0x0000_7F3A_0000_1000),
                len: 65536,
            },
        }),
    );
    m.insert(
        "put-inline",
        Expected::Descriptor(Descriptor::Put {
            common: common(0x0000_1003, true, false),
            target: 2,
            remote: 0x40,
            source: PutSource::Inline(
                Inline::new(&0x1122_3344_5566_7788u64.to_le_bytes()).unwrap(),
            ),
        }),
    );
    m.insert(
        "get",
        Expected::Descriptor(Descriptor::Get {
            common: common(0x0000_2001, true, false),
            target: 1,
            remote: 0x8000,
            local: Local::Segment(0x1_0000),
            len: 256,
        }),
    );
    m.insert(
        "am-short-request",
        am(0x3001, 5, Request, 64, &[1, 2, 3], AmBody::Short),
    );
    m.insert(
        "am-medium-request",
        am(
            0x3002,
            5,
            Request,
            65,
            &[0xDEAD_BEEF],
            AmBody::Medium {
                local: Local::Segment(0x3000),
                len: 100,
            },
        ),
    );
    m.insert(
        "am-long-request",
        am(
            0x3003,
            6,
            Request,
            66,
            &[7, 8],
            AmBody::Long {
                local: Local::Iova(0x1_0000_0000),
                len: 65536,
                remote: 0x2_0000,
            },
        ),
    );
    m.insert(
        "am-short-reply",
        am(0x3004, 5, Reply, 67, &[42], AmBody::Short),
    );
    m.insert(
        "am-medium-reply",
        am(
            0x3005,
            5,
            Reply,
            68,
            &[],
            AmBody::Medium {
                local: Local::Segment(0x4000),
                len: 4096,
            },
        ),
    );
    m.insert(
        "am-long-reply",
        am(
            0x3006,
            0,
            Reply,
            69,
            &[9],
            AmBody::Long {
                local: Local::Segment(0),
                len: 1,
                remote: 0xFFF,
            },
        ),
    );
    m.insert(
        "am-chained",
        am(
            0x3007,
            4,
            Request,
            70,
            &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
            AmBody::Short,
        ),
    );
    m.insert(
        "amo-fetch-w32",
        amo(0x4001, AmoOp::Fetch, AmoWidth::W32, 0x104, 0, 0),
    );
    m.insert(
        "amo-fetch-add-w64",
        amo(0x4002, AmoOp::FetchAdd, AmoWidth::W64, 0x100, 1, 0),
    );
    m.insert(
        "amo-compare-swap-w32",
        amo(0x4003, AmoOp::CompareSwap, AmoWidth::W32, 0x108, 7, 5),
    );
    m.insert(
        "amo-xor-w64",
        amo(
            0x4004,
            AmoOp::Xor,
            AmoWidth::W64,
            0x110,
            0xFF00_FF00_FF00_FF00,
            0,
        ),
    );
    m.insert(
        "completion-amo",
        Expected::Completion(Completion {
            tag: 0x4002,
            status: Status::Ok,
            opcode: cmd::opcode::AMO,
            target: 2,
            value: 41,
            bytes: 0,
            detail: 0,
            sq_index: 17,
            phase: true,
        }),
    );
    m.insert(
        "completion-error",
        Expected::Completion(Completion {
            tag: 0x5001,
            status: Status::BadLength,
            opcode: cmd::opcode::AM_MEDIUM_REQUEST,
            target: 3,
            value: 0,
            bytes: 0,
            detail: 5000,
            sq_index: 255,
            phase: false,
        }),
    );
    m.insert(
        "rx-medium-request",
        Expected::Rx(RxEntry {
            src: 3,
            direction: Request,
            category: Category::Medium,
            handler: 65,
            args: args(&[0xDEAD_BEEF, 2]),
            len: 100,
            addr: 0x3FC0_2000,
            phase: true,
        }),
    );
    m.insert(
        "bad-medium-length",
        Expected::Malformed(CmdError::LengthTooLong {
            opcode: 0x11,
            len: 5000,
            max: 4096,
        }),
    );
    m
}

/// The named ```hex examples of the spec.
fn spec_examples() -> BTreeMap<String, Vec<u8>> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../spec/registers.md");
    let text = std::fs::read_to_string(path).expect("spec/registers.md is readable");
    gasnet_core::spec_examples::register_examples(&text)
        .unwrap_or_else(|e| panic!("spec/registers.md: {e}"))
}

#[test]
fn every_stated_example_is_in_the_spec_and_nothing_else() {
    let spec: Vec<String> = spec_examples().into_keys().collect();
    let stated: Vec<String> = expected().into_keys().map(String::from).collect();
    assert_eq!(spec, stated);
}

#[test]
fn spec_examples_decode_and_reencode_exactly() {
    let spec = spec_examples();
    for (name, want) in expected() {
        let bytes = &spec[name];
        match want {
            Expected::Descriptor(d) => {
                assert_eq!(bytes.len(), 64 * d.slots(), "{name}: length");
                assert_eq!(cmd::decode(bytes), Ok(d), "{name}: decode");
                assert_eq!(cmd::encode_slots(&d).to_vec(), *bytes, "{name}: encode");
                assert_eq!(cmd::encode(&d)[..], bytes[..64], "{name}: head slot");
            }
            Expected::Completion(c) => {
                assert_eq!(bytes.len(), cmd::COMPLETION_BYTES, "{name}: length");
                assert_eq!(Completion::decode(bytes), Ok(c), "{name}: decode");
                assert_eq!(c.encode()[..], bytes[..], "{name}: encode");
            }
            Expected::Rx(r) => {
                assert_eq!(bytes.len(), cmd::RX_ENTRY_BYTES, "{name}: length");
                assert_eq!(RxEntry::decode(bytes), Ok(r), "{name}: decode");
                assert_eq!(r.encode()[..], bytes[..], "{name}: encode");
            }
            Expected::Malformed(e) => {
                assert_eq!(bytes.len(), 64, "{name}: length");
                assert_eq!(cmd::decode(bytes), Err(e), "{name}: decode");
            }
        }
    }
}

/// Rows of the spec's markdown tables whose first cell is a hex offset and
/// second a register name in backticks: `| 0x000 | `MAGIC` | ...`.
fn register_rows() -> BTreeMap<String, usize> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../spec/registers.md");
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 4 || !cells[0].is_empty() {
            continue;
        }
        let (Some(off), Some(name)) = (
            cells[1].strip_prefix("0x"),
            cells[2].strip_prefix('`').and_then(|n| n.strip_suffix('`')),
        ) else {
            continue;
        };
        if let Ok(off) = usize::from_str_radix(off, 16) {
            out.insert(name.to_string(), off);
        }
    }
    out
}

#[test]
fn register_table_matches_the_constants() {
    let rows = register_rows();
    let want = [
        ("MAGIC", regs::MAGIC),
        ("VERSION", regs::VERSION),
        ("CAPS", regs::CAPS),
        ("BUILD_ID", regs::BUILD_ID),
        ("NODE_ID", regs::NODE_ID),
        ("NODE_COUNT", regs::NODE_COUNT),
        ("WINDOW_SIZE_LO", regs::WINDOW_SIZE_LO),
        ("WINDOW_SIZE_HI", regs::WINDOW_SIZE_HI),
        ("SEG_BASE_LO", regs::SEG_BASE_LO),
        ("SEG_BASE_HI", regs::SEG_BASE_HI),
        ("SEG_SIZE_LO", regs::SEG_SIZE_LO),
        ("SEG_SIZE_HI", regs::SEG_SIZE_HI),
        ("RX_BOUNCE_LO", regs::RX_BOUNCE_LO),
        ("RX_BOUNCE_HI", regs::RX_BOUNCE_HI),
        ("SQ_BASE", regs::SQ_BASE),
        ("SQ_SIZE", regs::SQ_SIZE),
        ("SQ_HEAD", regs::SQ_HEAD),
        ("SQ_TAIL", regs::SQ_TAIL),
        ("CQ_BASE", regs::CQ_BASE),
        ("CQ_SIZE", regs::CQ_SIZE),
        ("CQ_HEAD", regs::CQ_HEAD),
        ("CQ_TAIL", regs::CQ_TAIL),
        ("RQ_BASE", regs::RQ_BASE),
        ("RQ_SIZE", regs::RQ_SIZE),
        ("RQ_HEAD", regs::RQ_HEAD),
        ("RQ_TAIL", regs::RQ_TAIL),
        ("DOORBELL", regs::DOORBELL),
        ("CTRL", regs::CTRL),
        ("STATUS", regs::STATUS),
        ("ERR_STATUS", regs::ERR_STATUS),
        ("ERR_INFO", regs::ERR_INFO),
        ("IRQ_MASK", regs::IRQ_MASK),
        ("IRQ_STATUS", regs::IRQ_STATUS),
        ("CNT_COMMANDS", regs::CNT_COMMANDS),
        ("CNT_PACKETS_TX", regs::CNT_PACKETS_TX),
        ("CNT_PACKETS_RX", regs::CNT_PACKETS_RX),
        ("CNT_BYTES_TX", regs::CNT_BYTES_TX),
        ("CNT_BYTES_RX", regs::CNT_BYTES_RX),
        ("CNT_RETRANSMITS", regs::CNT_RETRANSMITS),
        ("CNT_STALLS", regs::CNT_STALLS),
        ("CNT_ERRORS", regs::CNT_ERRORS),
        ("UPTIME_LO", regs::UPTIME_LO),
        ("UPTIME_HI", regs::UPTIME_HI),
        ("LINK0_STATUS", regs::link(0, regs::LINK_STATUS)),
        ("LINK0_PEER", regs::link(0, regs::LINK_PEER)),
        ("LINK0_CRC_ERRORS", regs::link(0, regs::LINK_CRC_ERRORS)),
        ("LINK0_RETRAINS", regs::link(0, regs::LINK_RETRAINS)),
        ("LINK1_STATUS", regs::link(1, regs::LINK_STATUS)),
        ("LINK1_PEER", regs::link(1, regs::LINK_PEER)),
        ("LINK1_CRC_ERRORS", regs::link(1, regs::LINK_CRC_ERRORS)),
        ("LINK1_RETRAINS", regs::link(1, regs::LINK_RETRAINS)),
        ("SQ_RING", regs::SQ_RING),
        ("CQ_RING", regs::CQ_RING),
        ("RQ_RING", regs::RQ_RING),
    ];
    for (name, off) in want {
        assert_eq!(
            rows.get(name),
            Some(&off),
            "register {name} in spec/registers.md"
        );
    }
    assert_eq!(
        rows.len(),
        want.len(),
        "spec has registers the code lacks: {rows:?}"
    );
}

#[test]
fn spec_states_the_identity_constants() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../spec/registers.md");
    let text = std::fs::read_to_string(path).unwrap();
    for needle in [
        format!("vendor id `{:#06x}`", cmd::PCI_VENDOR_ID),
        format!("device id `{:#06x}`", cmd::PCI_DEVICE_ID),
        format!("`{:#010x}`", cmd::MAGIC),
        format!("`{:#010x}`", cmd::VERSION),
    ] {
        assert!(
            text.contains(&needle),
            "spec/registers.md must state {needle}"
        );
    }
}
