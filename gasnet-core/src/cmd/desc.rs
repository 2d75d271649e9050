//! The 64-byte command descriptor (`spec/registers.md`, "Command descriptor").

mod codec;

pub use codec::{decode, decode_chain, encode, encode_slots, slot_count};

use super::error::CmdError;
use super::{flags, opcode};
use crate::amo::{AmoOp, AmoWidth};
use crate::types::{Category, Direction, MAX_ARGS, MAX_LONG, MAX_MEDIUM, NodeId, handlers};

/// Size of one command queue slot in bytes.
pub const SLOT_BYTES: usize = 64;
/// Most payload bytes a Put carries inline (bytes 32..64 of its slot).
pub const MAX_INLINE: usize = 32;
/// AM arguments carried by the head slot; more need a continuation slot.
pub const INLINE_ARGS: usize = 8;
/// AM arguments carried by a continuation slot.
pub const CHAIN_ARGS: usize = MAX_ARGS - INLINE_ARGS;
/// Largest Put or Get length in bytes (1 GiB); the board segments longer
/// transfers into packets itself, the host never needs to.
pub const MAX_TRANSFER: u32 = 1 << 30;

/// Fields every descriptor has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Common {
    /// Host cookie echoed in the completion entry.
    pub tag: u32,
    /// Write a completion entry on success ([`flags::COMPLETION`]).
    pub completion: bool,
    /// Start only after every earlier command completed ([`flags::FENCE_BEFORE`]).
    pub fence_before: bool,
}

impl Common {
    fn flag_bits(&self) -> u8 {
        let mut f = 0;
        if self.completion {
            f |= flags::COMPLETION;
        }
        if self.fence_before {
            f |= flags::FENCE_BEFORE;
        }
        f
    }

    fn from_bytes(b: &[u8]) -> Common {
        Common {
            tag: u32_at(b, 4),
            completion: b[1] & flags::COMPLETION != 0,
            fence_before: b[1] & flags::FENCE_BEFORE != 0,
        }
    }
}

/// Local memory a command reads from or writes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Local {
    /// An offset from the start of this board's segment (BAR2 offset
    /// `SEG_BASE + offset`).
    Segment(u64),
    /// A host I/O virtual address the board reaches by DMA
    /// ([`flags::LOCAL_IOVA`]; needs `caps::HOST_DMA`).
    Iova(u64),
}

impl Local {
    /// The address or offset, whichever kind it is.
    pub fn addr(self) -> u64 {
        match self {
            Local::Segment(a) | Local::Iova(a) => a,
        }
    }

    fn flag(self) -> u8 {
        match self {
            Local::Segment(_) => 0,
            Local::Iova(_) => flags::LOCAL_IOVA,
        }
    }

    fn from_bytes(b: &[u8]) -> Local {
        let a = u64_at(b, 16);
        if b[1] & flags::LOCAL_IOVA != 0 {
            Local::Iova(a)
        } else {
            Local::Segment(a)
        }
    }
}

/// Up to [`MAX_INLINE`] bytes carried in a Put descriptor itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Inline {
    len: u8,
    bytes: [u8; MAX_INLINE],
}

impl Inline {
    /// Inline data holding `data`; fails with [`CmdError::LengthTooLong`]
    /// beyond [`MAX_INLINE`] bytes.
    pub fn new(data: &[u8]) -> Result<Inline, CmdError> {
        if data.len() > MAX_INLINE {
            return Err(CmdError::LengthTooLong {
                opcode: opcode::PUT,
                len: u32::try_from(data.len()).unwrap_or(u32::MAX),
                max: MAX_INLINE as u32,
            });
        }
        let mut bytes = [0; MAX_INLINE];
        bytes[..data.len()].copy_from_slice(data);
        Ok(Inline {
            len: data.len() as u8,
            bytes,
        })
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    /// Number of bytes.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether there are no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The 0..=16 32-bit arguments of an active message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Args {
    len: u8,
    vals: [u32; MAX_ARGS],
}

impl Args {
    /// Arguments holding `args`; fails with [`CmdError::TooManyArgs`] beyond
    /// [`MAX_ARGS`].
    pub fn new(args: &[u32]) -> Result<Args, CmdError> {
        if args.len() > MAX_ARGS {
            return Err(CmdError::TooManyArgs(
                u8::try_from(args.len()).unwrap_or(u8::MAX),
            ));
        }
        let mut vals = [0; MAX_ARGS];
        vals[..args.len()].copy_from_slice(args);
        Ok(Args {
            len: args.len() as u8,
            vals,
        })
    }

    /// The arguments.
    pub fn as_slice(&self) -> &[u32] {
        &self.vals[..self.len as usize]
    }

    /// Number of arguments.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether they need a continuation slot (more than [`INLINE_ARGS`]).
    pub fn chained(&self) -> bool {
        self.len() > INLINE_ARGS
    }
}

/// Where a Put's bytes come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PutSource {
    /// `len` bytes at a local address.
    Local {
        /// Where the bytes are.
        addr: Local,
        /// How many (at most [`MAX_TRANSFER`]).
        len: u32,
    },
    /// Bytes inside the descriptor ([`flags::INLINE`]).
    Inline(Inline),
}

/// The category-specific part of an AM descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AmBody {
    /// Arguments only.
    Short,
    /// A payload of `len` bytes (at most `MAX_MEDIUM`) read from `local`,
    /// delivered to the target handler in a bounce buffer.
    Medium {
        /// Where the payload is.
        local: Local,
        /// Its length.
        len: u32,
    },
    /// A payload of `len` bytes (at most `MAX_LONG`) read from `local` and
    /// written at `remote` in the target's segment before its handler runs.
    Long {
        /// Where the payload is.
        local: Local,
        /// Its length.
        len: u32,
        /// Target segment offset.
        remote: u64,
    },
}

impl AmBody {
    /// The AM category.
    pub fn category(&self) -> Category {
        match self {
            AmBody::Short => Category::Short,
            AmBody::Medium { .. } => Category::Medium,
            AmBody::Long { .. } => Category::Long,
        }
    }
}

/// One command, as a host submits it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Descriptor {
    /// Does nothing; completes at once.
    Nop {
        /// Tag and flags.
        common: Common,
    },
    /// Every earlier command completes before any later one starts; its
    /// completion (if requested) is written at that point.
    Fence {
        /// Tag and flags.
        common: Common,
    },
    /// Writes bytes into `target`'s segment at `remote`; complete when the
    /// target acknowledged them.
    Put {
        /// Tag and flags.
        common: Common,
        /// Destination node.
        target: NodeId,
        /// Destination segment offset.
        remote: u64,
        /// Where the bytes come from.
        source: PutSource,
    },
    /// Reads `len` bytes at `remote` in `target`'s segment into `local`;
    /// complete when they have landed.
    Get {
        /// Tag and flags.
        common: Common,
        /// Source node.
        target: NodeId,
        /// Source segment offset.
        remote: u64,
        /// Where the bytes go.
        local: Local,
        /// How many (at most [`MAX_TRANSFER`]).
        len: u32,
    },
    /// Sends an active message; complete when its payload has been read
    /// (the local source may be reused).
    Am {
        /// Tag and flags.
        common: Common,
        /// Destination node (for a reply: the requester).
        target: NodeId,
        /// Request or reply.
        direction: Direction,
        /// Handler index (1..=255).
        handler: u8,
        /// Arguments.
        args: Args,
        /// Category and payload.
        body: AmBody,
    },
    /// A remote atomic on the `width` word at `remote` in `target`'s
    /// segment; the completion carries the fetched value.
    Amo {
        /// Tag and flags.
        common: Common,
        /// Node holding the word.
        target: NodeId,
        /// The operation.
        op: AmoOp,
        /// 32 or 64 bits.
        width: AmoWidth,
        /// Segment offset of the word, aligned to `width`.
        remote: u64,
        /// Operand (0 for `Fetch`); for W32 the upper 32 bits are 0.
        operand: u64,
        /// Compare value of `CompareSwap` (0 for every other op).
        compare: u64,
    },
}

impl Descriptor {
    /// Tag and flags.
    pub fn common(&self) -> &Common {
        match self {
            Descriptor::Nop { common }
            | Descriptor::Fence { common }
            | Descriptor::Put { common, .. }
            | Descriptor::Get { common, .. }
            | Descriptor::Am { common, .. }
            | Descriptor::Amo { common, .. } => common,
        }
    }

    /// The opcode of its (head) slot.
    pub fn opcode(&self) -> u8 {
        match self {
            Descriptor::Nop { .. } => opcode::NOP,
            Descriptor::Fence { .. } => opcode::FENCE,
            Descriptor::Put { .. } => opcode::PUT,
            Descriptor::Get { .. } => opcode::GET,
            Descriptor::Am {
                direction, body, ..
            } => am_opcode(*direction, body.category()),
            Descriptor::Amo { .. } => opcode::AMO,
        }
    }

    /// Command queue slots it occupies: 2 for an AM with more than
    /// [`INLINE_ARGS`] arguments, else 1.
    pub fn slots(&self) -> usize {
        match self {
            Descriptor::Am { args, .. } if args.chained() => 2,
            _ => 1,
        }
    }

    /// Checks that it encodes to bytes [`decode`] accepts (lengths within
    /// limits, aligned atomics, operands that fit, a valid handler...).
    pub fn validate(&self) -> Result<(), CmdError> {
        let e = encode_slots(self);
        decode(&e.to_vec()).map(|_| ())
    }
}

/// A descriptor's encoding: one slot, or two for a chained AM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Encoded {
    slots: [[u8; SLOT_BYTES]; 2],
    count: u8,
}

impl Encoded {
    /// The slots, in queue order (the continuation, if any, goes in the
    /// slot after the head, wrapping at the end of the ring).
    pub fn as_slots(&self) -> &[[u8; SLOT_BYTES]] {
        &self.slots[..self.count as usize]
    }

    /// The slots concatenated.
    pub fn to_vec(&self) -> Vec<u8> {
        self.as_slots().concat()
    }
}

fn am_opcode(direction: Direction, category: Category) -> u8 {
    let reply = match direction {
        Direction::Request => 0,
        Direction::Reply => 1,
    };
    let cat = match category {
        Category::Short => 0,
        Category::Medium => 1,
        Category::Long => 2,
    };
    opcode::AM | reply << 3 | cat
}

fn am_kind(op: u8) -> Option<(Direction, Category)> {
    let direction = match op & 0xF8 {
        0x10 => Direction::Request,
        0x18 => Direction::Reply,
        _ => return None,
    };
    let category = match op & 0x07 {
        0 => Category::Short,
        1 => Category::Medium,
        2 => Category::Long,
        _ => return None,
    };
    Some((direction, category))
}

pub(super) fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut x = [0; 4];
    x.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(x)
}

pub(super) fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut x = [0; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}

pub(super) fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

pub(super) fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// Fails with [`CmdError::ReservedNonZero`] at the first non-zero byte of
/// `b[from..to]`; `base` is added to the reported offset.
pub(super) fn zero(b: &[u8], from: usize, to: usize, base: usize) -> Result<(), CmdError> {
    match b[from..to].iter().position(|&v| v != 0) {
        Some(i) => Err(CmdError::ReservedNonZero {
            offset: base + from + i,
            value: b[from + i],
        }),
        None => Ok(()),
    }
}
